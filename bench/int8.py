"""Int8 recipes for the ONNX encoder: size, speed and k-NN agreement with fp32, per variant.

For each dataset (pool ``train_10shot_seed0.csv``, queries ``test.csv``) and encoder (the frozen
MiniLM and one tuned on the pool with the default method), every variant of
:mod:`core.bundle.quantise` is exported and compared with the fp32 torch model:

- ``size MB`` of the int8 graph;
- ``1 utt ms`` (p50 over ``--latency-n`` single utterances) and ``32 utt ms`` (a batch of 32,
  median), one thread, fp32 measured in the same loop (alternately) so that load from other
  processes falls on both alike;
- ``agree``: top-1 k-NN agreement with fp32 when the int8 model queries the fp32 pool vectors (a
  bundle), ``agree own``: when it encodes the pool too (the live app);
- ``cos``: mean and minimum cosine between the int8 and fp32 vectors of the queries.

The parity bar is 99 % (:func:`core.bundle.onnx.export_onnx`).

Usage:
    nice -n 10 python -m bench.int8 --datasets banking77,clinc150 --encoders frozen,tuned
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
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
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

logger = logging.getLogger("bench.int8")


def top1(
    pool: np.ndarray, labels: Sequence[str], queries: np.ndarray, k: int = 1
) -> list[str | None]:
    from core.retrieval.factory import vector_pool

    return [p.top for p in vector_pool(pool, labels, k=k).rank(queries, show=0)]


def agreement(a: Sequence[str | None], b: Sequence[str | None]) -> float:
    return float(np.mean([x == y for x, y in zip(a, b, strict=True)]))


def timings(models: dict[str, Any], texts: Sequence[str], n: int) -> dict[str, dict[str, float]]:
    """Single-utterance p50/p95 and batch-of-32 median, measured alternately."""
    for m in models.values():
        for t in texts[:5]:
            m.encode([t])
    one: dict[str, list[float]] = {name: [] for name in models}
    for t in texts[:n]:
        for name, m in models.items():
            start = time.perf_counter()
            m.encode([t])
            one[name].append((time.perf_counter() - start) * 1000)
    batch: dict[str, list[float]] = {name: [] for name in models}
    for s in range(0, min(len(texts), 32 * max(4, n // 32)), 32):
        chunk = list(texts[s : s + 32])
        for name, m in models.items():
            start = time.perf_counter()
            m.encode(chunk)
            batch[name].append((time.perf_counter() - start) * 1000)
    return {
        name: {
            "p50_ms": float(np.percentile(one[name], 50)),
            "p95_ms": float(np.percentile(one[name], 95)),
            "batch32_ms": float(statistics.median(batch[name])),
        }
        for name in models
    }


def tuned_encoder(pool_texts: list[str], pool_labels: list[str]) -> Any:
    from core.training import TrainConfig, train_encoder

    start = time.perf_counter()
    trained = train_encoder(
        "minilm", pool_texts, [(x,) for x in pool_labels], TrainConfig(), device="cpu"
    )
    logger.info("tuned encoder in %.0f s", time.perf_counter() - start)
    return trained.encoder()


def run_one(
    enc: Any,
    pool: tuple[list[str], list[str]],
    test: list[str],
    variants: Sequence[str],
    latency_n: int,
) -> dict[str, dict[str, float]]:
    from core.bundle.onnx import MODEL_FILE, OnnxEncoder, quantised_export, traced

    pool_texts, pool_labels = pool
    ref_pool, ref_q = enc.encode(pool_texts), enc.encode(test)
    ref_top = top1(ref_pool, pool_labels, ref_q)
    rows: dict[str, dict[str, float]] = {}
    fp_times: dict[str, list[float]] = {"p50_ms": [], "p95_ms": [], "batch32_ms": []}
    with tempfile.TemporaryDirectory() as tmp, traced(enc) as trace:
        for name in variants:
            folder = Path(tmp) / name
            folder.mkdir()
            start = time.perf_counter()
            quantised_export(enc, folder, variant=name, calibration_texts=pool_texts, trace=trace)
            export_s = time.perf_counter() - start
            q8 = OnnxEncoder(folder, threads=1, allow_spinning=False)
            q, own_pool = q8.encode(test), q8.encode(pool_texts)
            cos = (q * ref_q).sum(axis=1)
            times = timings({"fp32": enc, name: q8}, test, latency_n)
            rows[name] = {
                "size_mb": (folder / MODEL_FILE).stat().st_size / 1e6,
                **times[name],
                "agree": agreement(ref_top, top1(ref_pool, pool_labels, q)),
                "agree_own": agreement(ref_top, top1(own_pool, pool_labels, q)),
                "cos_mean": float(cos.mean()),
                "cos_min": float(cos.min()),
                "export_s": export_s,
            }
            for key, values in fp_times.items():  # every variant's loop timed fp32 too
                values.append(times["fp32"][key])
            logger.info("%s: %s", name, rows[name])
    rows["fp32 torch"] = {
        "size_mb": 0.0,
        **{key: float(np.median(values)) for key, values in fp_times.items()},
        "agree": 1.0,
        "agree_own": 1.0,
        "cos_mean": 1.0,
        "cos_min": 1.0,
        "export_s": 0.0,
    }
    return rows


def live(args: argparse.Namespace) -> dict[str, Any]:
    """One prediction in-process (the live Predictor, explanation evidence included) over a pool
    of ``--live-pool`` BANKING77 training utterances: fp32 torch vs the exported int8 encoder,
    each voting over a pool it encoded itself; measured alternately, ``--threads`` threads."""
    from core.bundle.onnx import OnnxEncoder, export_onnx
    from core.encoding.registry import load_encoder
    from core.retrieval.factory import PredictorFactory

    texts, labels = read_csv(args.data / "banking77" / "train.csv")
    texts, labels = texts[: args.live_pool], labels[: args.live_pool]
    queries, _ = read_csv(args.data / "banking77" / "test.csv")
    queries = queries[: args.latency_n]
    enc = load_encoder("minilm", device="cpu")
    with tempfile.TemporaryDirectory() as tmp:
        small, small_labels = read_csv(args.data / "banking77" / "train_10shot_seed0.csv")
        exported = export_onnx(
            enc,
            Path(tmp) / "onnx",
            pool_texts=small,
            pool_labels=[(x,) for x in small_labels],
            eval_texts=queries,
            own_pool=True,
        )
        q8 = OnnxEncoder(exported.folder, threads=args.threads, allow_spinning=False)
        models: dict[str, Any] = {"fp32 torch": enc, f"int8 {exported.variant}": q8}
        predictors = {}
        for name, m in models.items():
            start = time.perf_counter()
            vecs = m.encode(texts)
            logger.info(
                "%s encoded %d pool texts in %.0f s", name, len(texts), time.perf_counter() - start
            )
            predictors[name] = PredictorFactory(m).build(texts, labels, vectors=vecs)
        times: dict[str, list[float]] = {name: [] for name in models}
        for p in predictors.values():
            p.predict_with_evidence(queries[:5], show=5)
        for q in queries:
            for name, p in predictors.items():
                start = time.perf_counter()
                p.predict_with_evidence([q], show=5)
                times[name].append((time.perf_counter() - start) * 1000)
    rows = {
        name: {"p50_ms": float(np.percentile(t, 50)), "p95_ms": float(np.percentile(t, 95))}
        for name, t in times.items()
    }
    print(f"\none prediction in-process over a {len(texts):,} pool, {args.threads} thread(s)\n")
    print("| encoder | p50 ms | p95 ms |\n| --- | --- | --- |")
    for name, r in rows.items():
        print(f"| {name} | {r['p50_ms']:.2f} | {r['p95_ms']:.2f} |")
    return {"pool": len(texts), "threads": args.threads, "rows": rows}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from core.bundle.quantise import VARIANTS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--datasets", default="banking77,clinc150")
    parser.add_argument("--encoders", default="frozen,tuned")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--latency-n", type=int, default=200)
    parser.add_argument("--live", action="store_true", help="only the in-process prediction")
    parser.add_argument("--live-pool", type=int, default=10_000)
    parser.add_argument("--threads", type=int, default=1, help="threads for --live")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "int8.json")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    logger.setLevel(logging.INFO)

    import torch

    torch.set_num_threads(args.threads if args.live else 1)
    if args.live:
        result = live(args)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_name(args.out.stem + "-live.json").write_text(json.dumps(result, indent=2))
        return result
    from core.encoding.registry import load_encoder, resolve_path

    fp32_mb = sum(p.stat().st_size for p in resolve_path("minilm").glob("*.safetensors")) / 1e6
    variants = [v for v in args.variants.split(",") if v]
    results: dict[str, Any] = {"threads": 1, "load": os.getloadavg(), "runs": {}}
    for ds in args.datasets.split(","):
        pool = read_csv(args.data / ds / "train_10shot_seed0.csv")
        test, _ = read_csv(args.data / ds / "test.csv")
        for which in args.encoders.split(","):
            enc = (
                load_encoder("minilm", device="cpu") if which == "frozen" else tuned_encoder(*pool)
            )
            rows = run_one(enc, pool, test, variants, args.latency_n)
            rows["fp32 torch"]["size_mb"] = fp32_mb
            results["runs"][f"{ds}/{which}"] = rows
            print(f"\n{ds} ({len(pool[0])} pool, {len(test)} test), {which} encoder, 1 thread\n")
            print(
                "| variant | size MB | 1 utt p50 ms | p95 ms | 32 utt ms | agree | agree own "
                "| cos mean | cos min |"
            )
            print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
            for name, r in rows.items():
                print(
                    f"| {name} | {r['size_mb']:.1f} | {r['p50_ms']:.2f} | {r['p95_ms']:.2f} | "
                    f"{r['batch32_ms']:.1f} | {100 * r['agree']:.2f} | {100 * r['agree_own']:.2f} | "
                    f"{r['cos_mean']:.4f} | {r['cos_min']:.4f} |"
                )
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
