"""Benchmark: the fast method's training phase alone, and what CUDA's attention kernels cost it.

One :func:`core.training.train_encoder` call (BANKING77 10-shot seed 0 from ``--data``, the
default :class:`~core.training.TrainConfig`) in a worker thread, as the CLI and the worker run a
job, after the base encoder has encoded 500 utterances (the job's order: the frozen base is read
and used first, training copies it). Prints one JSON line: wall and process-CPU seconds, steps,
the last loss. Run each variant in its own process (the flags and the encoder cache are the
process's).

Variants, to find what a CUDA step waits for (issue 44: an H200's 100 steps took 8-19 s with
bf16 autocast against 4.5 s without cuDNN's attention):

* ``--no-cudnn-sdp``: ``torch.backends.cuda.enable_cudnn_sdp(False)`` for the whole process;
* ``--no-bf16``: the loop's bf16 autocast off (fp32, as the CPU runs);
* ``--round N``: each chunk padded to a multiple of N tokens (fewer distinct shapes).

Usage:
    python -m bench.train_phase --device cuda --data ../shared/data [--no-cudnn-sdp]
"""

from __future__ import annotations

import argparse
import csv
import json
import threading
import time
from pathlib import Path
from typing import Any


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path(__file__).parents[2] / "shared" / "data")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--no-cudnn-sdp", action="store_true")
    ap.add_argument("--no-bf16", action="store_true")
    ap.add_argument("--round", type=int, default=0)
    args = ap.parse_args()

    import torch

    from core.encoding.registry import load_encoder
    from core.training import TrainConfig, tokens, train_encoder

    with open(args.data / "banking77" / "train_10shot_seed0.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    texts = [r["text"] for r in rows]
    labels = [(r["label"],) for r in rows]
    if args.no_cudnn_sdp:
        torch.backends.cuda.enable_cudnn_sdp(False)
    if args.no_bf16:
        torch.cuda.is_bf16_supported = lambda *a, **k: False  # type: ignore[assignment]
    if args.round:
        r = args.round
        cut = tokens.TokenBank.features

        def features(bank: Any, rows: list[int]) -> dict[str, torch.Tensor]:
            longest = next(iter(bank.tensors.values())).shape[1]
            bank_lengths = bank.lengths
            bank.lengths = [min(-(-n // r) * r, longest) for n in bank_lengths]
            try:
                return cut(bank, rows)
            finally:
                bank.lengths = bank_lengths

        tokens.TokenBank.features = features  # type: ignore[method-assign,assignment]
    load_encoder("minilm", device=args.device).encode(texts[:500])
    out: dict[str, Any] = {}

    def run() -> None:
        t, c = time.perf_counter(), time.process_time()
        trained = train_encoder("minilm", texts, labels, TrainConfig(), device=args.device)
        if args.device == "cuda":
            torch.cuda.synchronize()
        out.update(wall=round(time.perf_counter() - t, 2), cpu=round(time.process_time() - c, 2))
        out.update(steps=trained.stats.get("steps"), loss=trained.stats.get("loss"))

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    print(json.dumps({**vars(args), "data": str(args.data), **out}), flush=True)


if __name__ == "__main__":
    main()
