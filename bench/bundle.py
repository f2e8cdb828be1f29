"""Benchmark of the compact encoder: fp32 torch vs int8 ONNX on a few CPU cores.

Reports encoder size (MB), single-utterance latency (p50/p95 ms), batched throughput (utt/s) and
1-NN accuracy on BANKING77 10-shot seed 0 (pool: ``train_10shot_seed0.csv``, queries:
``test.csv``). Both encoders query the same fp32 pool vectors, as a bundle with an ONNX encoder
does. Targets: int8 encoder ≤ 25 MB, accuracy within 0.5 points, ≥ 1.5x faster. Latency and
throughput are measured alternately (one utterance or chunk per model in turn) with
``OMP_WAIT_POLICY=PASSIVE`` and no onnxruntime spinning, so a CPU shared with other processes
slows both alike.

Usage:
    python -m bench.bundle --data ../shared/data --threads 2 --out bench/results/bundle.json
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench._common import offline_models
from bench.csvdata import read_csv

ROOT = Path(__file__).resolve().parents[1]

offline_models()
# Threads sleep instead of spinning when idle: on a CPU shared with other processes, spinning
# OpenMP threads make fp32 torch 30x slower with 2 threads (both runtimes get the same treatment).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

logger = logging.getLogger("bench.bundle")


def interleaved(
    models: dict[str, Any], texts: Sequence[str], latency_n: int, chunk: int = 128
) -> tuple[dict[str, dict[str, float]], dict[str, np.ndarray]]:
    """Latency and throughput of each model, measured alternately so that load from other
    processes on a shared machine falls on all of them alike."""
    for m in models.values():  # warm-up
        for t in texts[:10]:
            m.encode([t])
    times: dict[str, list[float]] = {name: [] for name in models}
    for t in texts[:latency_n]:
        for name, m in models.items():
            start = time.perf_counter()
            m.encode([t])
            times[name].append((time.perf_counter() - start) * 1000)
    secs = dict.fromkeys(models, 0.0)
    parts: dict[str, list[np.ndarray]] = {name: [] for name in models}
    for start_i in range(0, len(texts), chunk):
        batch = list(texts[start_i : start_i + chunk])
        for name, m in models.items():
            start = time.perf_counter()
            parts[name].append(m.encode(batch))
            secs[name] += time.perf_counter() - start
    stats = {
        name: {
            "p50_ms": float(np.percentile(times[name], 50)),
            "p95_ms": float(np.percentile(times[name], 95)),
            "throughput_utt_s": len(texts) / secs[name],
        }
        for name in models
    }
    return stats, {name: np.concatenate(p) for name, p in parts.items()}


def accuracy(
    pool_vecs: np.ndarray, pool_labels: list[str], q: np.ndarray, gold: list[str]
) -> tuple[float, list[str | None]]:
    from core.retrieval.factory import vector_pool

    tops = [p.top for p in vector_pool(pool_vecs, pool_labels).rank(q, show=0)]
    return float(np.mean([t == g for t, g in zip(tops, gold, strict=True)])), tops


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--dataset", default="banking77")
    parser.add_argument("--encoder", default="minilm")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--latency-n", type=int, default=200)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "bundle.json")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    logger.setLevel(logging.INFO)

    import torch

    torch.set_num_threads(args.threads)
    from core.bundle.onnx import MODEL_FILE, OnnxEncoder, quantised_export
    from core.encoding.registry import load_encoder, resolve_path

    pool_texts, pool_labels = read_csv(args.data / args.dataset / "train_10shot_seed0.csv")
    test_texts, test_labels = read_csv(args.data / args.dataset / "test.csv")
    enc = load_encoder(args.encoder, device="cpu")
    fp32_mb = sum(p.stat().st_size for p in resolve_path(args.encoder).glob("*.safetensors")) / 1e6

    results: dict[str, Any] = {
        "dataset": args.dataset,
        "threads": args.threads,
        "n_pool": len(pool_texts),
        "n_test": len(test_texts),
    }
    with tempfile.TemporaryDirectory() as tmp:
        onnx_dir = Path(tmp) / "onnx"
        onnx_dir.mkdir()
        start = time.perf_counter()
        quantised_export(enc, onnx_dir)
        export_s = time.perf_counter() - start
        onnx = OnnxEncoder(onnx_dir, threads=args.threads, allow_spinning=False)
        int8_mb = (onnx_dir / MODEL_FILE).stat().st_size / 1e6

        pool_vecs = enc.encode(pool_texts)
        models = {"fp32 torch": enc, "int8 onnx": onnx}
        sizes = {"fp32 torch": fp32_mb, "int8 onnx": int8_mb}
        stats, vecs = interleaved(models, test_texts, args.latency_n)
        rows: dict[str, dict[str, float]] = {}
        tops: dict[str, list[str | None]] = {}
        for name in models:
            acc, tops[name] = accuracy(pool_vecs, pool_labels, vecs[name], test_labels)
            rows[name] = {"size_mb": sizes[name], **stats[name], "accuracy": acc}
            logger.info("%s: %s", name, rows[name])
    agree = float(
        np.mean([a == b for a, b in zip(tops["fp32 torch"], tops["int8 onnx"], strict=True)])
    )
    fp, q8 = rows["fp32 torch"], rows["int8 onnx"]
    results.update(
        {
            "rows": rows,
            "export_seconds": export_s,
            "top1_agreement": agree,
            "speedup_p50": fp["p50_ms"] / q8["p50_ms"],
            "speedup_throughput": q8["throughput_utt_s"] / fp["throughput_utt_s"],
            "accuracy_delta_points": 100 * (q8["accuracy"] - fp["accuracy"]),
        }
    )
    print(f"\n{args.dataset} 10-shot seed 0, {args.threads} threads\n")
    print("| encoder | size MB | p50 ms | p95 ms | utt/s | 1-NN acc |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, r in rows.items():
        print(
            f"| {name} | {r['size_mb']:.1f} | {r['p50_ms']:.2f} | {r['p95_ms']:.2f} | "
            f"{r['throughput_utt_s']:.0f} | {100 * r['accuracy']:.2f} |"
        )
    print(
        f"\nspeed-up p50 {results['speedup_p50']:.2f}x, throughput "
        f"{results['speedup_throughput']:.2f}x; accuracy delta "
        f"{results['accuracy_delta_points']:+.2f} points; top-1 agreement {agree:.2%}"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
