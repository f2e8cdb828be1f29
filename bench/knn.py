"""k-NN with the frozen default encoder: accuracy, encoding time, predict latency over a 10k pool,
and how fast a newly labelled utterance changes a prediction.

    python -m bench.knn --data ../shared/data/banking77 --train train_10shot_seed0.csv

Prints a table and a JSON line (also written to bench/results/knn.json).
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def read_csv(path: Path) -> tuple[list[str], list[str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return [r["text"] for r in rows], [r["label"] for r in rows]


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "banking77")
    ap.add_argument("--train", default="train_10shot_seed0.csv")
    ap.add_argument("--test", default="test.csv")
    ap.add_argument(
        "--pool",
        default="train.csv",
        help="file whose first --pool-size rows make the latency pool",
    )
    ap.add_argument("--pool-size", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--encoder", default="minilm")
    args = ap.parse_args()

    import torch

    from app.access import open_project
    from app.config import load_settings
    from app.services.labelling import data as data_svc
    from app.services.models.predict import predict_one
    from app.services.projects.io import destination, import_utterances
    from app.serving.state import ServingState
    from core.encoding.registry import load_encoder
    from core.retrieval.factory import PredictorFactory
    from storage.utterances import NewUtterance

    results: dict[str, float | int | str] = {
        "encoder": args.encoder,
        "threads": torch.get_num_threads(),
    }
    enc = load_encoder(args.encoder, device="cpu")
    train_x, train_y = read_csv(args.data / args.train)
    test_x, test_y = read_csv(args.data / args.test)

    # 1. accuracy of the frozen encoder
    t = time.perf_counter()
    train_v = enc.encode(train_x)
    results["encode_pool_s"] = round(time.perf_counter() - t, 2)
    results["encode_utt_per_s"] = round(len(train_x) / results["encode_pool_s"], 1)  # type: ignore[operator]
    test_v = enc.encode(test_x)
    for k in (1, 3, 5):
        preds = PredictorFactory(enc, k=k).build(train_x, train_y, vectors=train_v).rank(test_v)
        acc = float(np.mean([p.top == y for p, y in zip(preds, test_y, strict=True)]))
        results[f"acc_{k}nn"] = round(100 * acc, 2)

    # 2. single-utterance latency over a 10k pool, core only and through the app's service
    pool_x, pool_y = read_csv(args.data / args.pool)
    pool_x, pool_y = pool_x[: args.pool_size], pool_y[: args.pool_size]
    queries = test_x[: args.queries]
    with tempfile.TemporaryDirectory() as tmp:
        ctx = ServingState.open(load_settings(tmp))
        unique = dict(zip(pool_x, pool_y, strict=True))  # the source repeats a few texts
        rows = [NewUtterance(x, (y,), "train") for x, y in unique.items()]
        import_utterances(ctx.db, destination(ctx.db, "bench"), rows)
        t = time.perf_counter()
        ctx.live.pool(1)
        results["pool_build_s"] = round(time.perf_counter() - t, 2)
        results["pool_size"] = len(rows)
        for q in queries[:10]:  # warm-up
            predict_one(ctx.live, open_project(ctx.db, "bench"), q)
        core_ms, service_ms = [], []
        pool = ctx.live.pool(1)
        for q in queries:
            t = time.perf_counter()
            pool.predictor.rank(enc.encode([q]))
            core_ms.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            predict_one(ctx.live, open_project(ctx.db, "bench"), q)
            service_ms.append((time.perf_counter() - t) * 1000)
        results["core_p50_ms"] = round(pct(core_ms, 50), 2)
        results["core_p95_ms"] = round(pct(core_ms, 95), 2)
        results["service_p50_ms"] = round(pct(service_ms, 50), 2)
        results["service_p95_ms"] = round(pct(service_ms, 95), 2)

        # 3. label -> changed prediction: add a new intent's example and predict a paraphrase
        label_ms = []
        for i in range(20):
            query = f"can I order a hoverboard number {i} for my cousin"
            t = time.perf_counter()
            data_svc.add_utterance(
                ctx.db,
                open_project(ctx.db, "bench"),
                f"I want to buy hoverboard model {i}",
                [f"hoverboard_{i}"],
                create=True,  # a new intent each time, on purpose
            )
            top = predict_one(ctx.live, open_project(ctx.db, "bench"), query)["top"]
            label_ms.append((time.perf_counter() - t) * 1000)
            assert top == f"hoverboard_{i}", top
        results["label_to_prediction_p50_ms"] = round(statistics.median(label_ms), 1)
        results["label_to_prediction_max_ms"] = round(max(label_ms), 1)
        ctx.close()

    targets = {
        "service_p50_ms": ("≤ 10", 10.0),
        "service_p95_ms": ("≤ 25", 25.0),
        "label_to_prediction_p50_ms": ("≤ 200", 200.0),
    }
    print(f"{'metric':32} {'value':>10}  target")
    for key, value in results.items():
        tgt = targets.get(key)
        mark = ""
        if tgt is not None and isinstance(value, float | int):
            mark = f"{tgt[0]}  {'met' if value <= tgt[1] else 'MISSED'}"
        print(f"{key:32} {value!s:>10}  {mark}")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "knn.json").write_text(json.dumps(results, indent=2))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
