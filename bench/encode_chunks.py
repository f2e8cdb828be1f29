"""Benchmark: what the chunk limit of one turn (:data:`core.encoding.registry.CHUNK_LIMIT`)
costs a retrain's measurement on this process's device: the seconds of
:meth:`core.encoding.registry.Encoder.encode` over the texts a checkpoint's gate encodes on
BANKING77 (the whole test split and the 10-shot pool: 3,850 texts), at each limit of
``--limits``, a fresh encoder each (its turn sizes learnt anew), the second of two passes timed;
and sentence-transformers' own ``encode`` at the same batch sizes beside it (no turns).

Usage:
    python -m bench.encode_chunks --limits 64,128,256,512,1024 [--encoder minilm]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def texts(data: Path) -> list[str]:
    found: list[str] = []
    for name in ("test.csv", "train_10shot_seed0.csv"):
        with (data / "banking77" / name).open(encoding="utf-8", newline="") as f:
            found += [r["text"] for r in csv.DictReader(f)]
    return found


def timed(run: Callable[..., object], *args: object, **kwargs: object) -> float:
    import torch

    began = time.perf_counter()
    run(*args, **kwargs)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return round(time.perf_counter() - began, 3)


def main() -> int:
    from core.encoding.registry import Encoder, load_encoder

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limits", default="64,128,256,512,1024")
    ap.add_argument("--encoder", default="minilm")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    rows = texts(args.data)
    base = load_encoder(args.encoder)
    head = {"device": base.device, "texts": len(rows), "cpus": os.cpu_count()}
    print(head, f"default chunk limit {base.chunk_limit}", flush=True)
    found = []
    for limit in (int(n) for n in args.limits.split(",")):
        fresh = Encoder(base.model, base.name, base.fingerprint)
        first = timed(fresh.encode, rows, batch_size=limit)
        turns = timed(fresh.encode, rows, batch_size=limit)
        raw = timed(
            base.model.encode,
            rows,
            batch_size=limit,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        found.append({"limit": limit, "first_s": first, "encode_s": turns, "st_encode_s": raw})
        print(f"{limit:>6} {first:>8} {turns:>9} {raw:>12}", flush=True)
    if args.out:
        args.out.write_text(json.dumps({"environment": head, "rows": found}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
