"""A multi-label project before its first retrain (no head): the k-NN decision at the fixed 0.5
threshold against the threshold calibrated out of fold on the train pool
(:mod:`core.retrieval.knn_threshold`), on NLU++ with the frozen encoder.

The Predictor is the app's (:class:`core.retrieval.factory.PredictorFactory`: nearest example +
prototype, the intents' humanised names as anchors at the default weight), deciding through
:meth:`~core.retrieval.predictor.Predictor.predict_vectors` exactly as the live pool does. Regimes
of ``bench/multilabel.py``: ``high`` = train on nine ``fold`` groups, test on the tenth; ``low`` =
train on one, test on the other nine. Scores: exact match and micro-F1 on the test rows (rows with
no intent included, as the evaluation counts them).

Usage:
    .venv/bin/python -m bench.multilabel_knn --folds 0 1 2
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "nlupp"


def read(path: Path) -> list[tuple[str, tuple[str, ...], int]]:
    with path.open(newline="", encoding="utf-8") as f:
        return [
            (r["text"], tuple(x for x in r["labels"].split("|") if x), int(r["fold"]))
            for r in csv.DictReader(f)
        ]


def run(
    rows: list[tuple[str, tuple[str, ...], int]],
    vectors: np.ndarray,
    fold: int,
    regime: str,
    factory: Any,
) -> dict[str, float]:
    from core.multilabel.metrics import multilabel_scores
    from core.retrieval.knn_threshold import calibrate_knn_threshold
    from core.retrieval.predictor import MULTI_LABEL_KNN_THRESHOLD

    train = [i for i, r in enumerate(rows) if (r[2] != fold) == (regime == "high")]
    test = [i for i in range(len(rows)) if i not in set(train)]
    pool = factory.build(
        [rows[i][0] for i in train], [rows[i][1] for i in train], vectors=vectors[train]
    )
    gold = [rows[i][1] for i in test]
    out: dict[str, float] = {"train": len(train), "test": len(test)}
    started = time.monotonic()
    thresholds = {
        "fixed": MULTI_LABEL_KNN_THRESHOLD,
        "micro_f1": calibrate_knn_threshold(pool, criterion="micro_f1"),
        "exact_match": calibrate_knn_threshold(pool, criterion="exact_match"),
    }
    out["calibrate_s"] = round((time.monotonic() - started) / 2, 2)
    for name, t in thresholds.items():
        assert t is not None
        pool.thresholds = {"default": float(t)}
        rows_out = pool.predict_vectors([rows[i][0] for i in test], vectors[test], show=0)
        pred = [tuple(r["labels"]) for r, _ in rows_out]
        scores = multilabel_scores(gold, pred)
        out[f"{name}_threshold"] = round(float(t), 3)
        out[f"{name}_exact"] = round(100 * scores["exact_match"], 1)
        out[f"{name}_micro_f1"] = round(100 * scores["micro_f1"], 1)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--domains", nargs="+", default=["banking", "hotels"])
    ap.add_argument("--regimes", nargs="+", default=["high", "low"])
    ap.add_argument("--folds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--encoder", default="minilm")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "multilabel_knn.json")
    args = ap.parse_args(argv)

    from core.encoding.registry import load_encoder
    from core.retrieval.anchors import DEFAULT_ANCHOR_WEIGHT, anchor_texts
    from core.retrieval.factory import Anchors, PredictorFactory

    encoder = load_encoder(args.encoder, device="cpu")
    results: list[dict[str, Any]] = []
    for domain in args.domains:
        rows = read(args.data / f"{domain}.csv")
        vectors = encoder.encode([r[0] for r in rows])
        names = anchor_texts({n for r in rows for n in r[1]})
        anchors = Anchors(names, DEFAULT_ANCHOR_WEIGHT, encoder.encode(list(names.values())))
        factory = PredictorFactory(encoder, anchors=anchors, multi_label=True)
        for regime in args.regimes:
            for fold in args.folds:
                row = {"domain": domain, "regime": regime, "fold": fold}
                row.update(run(rows, vectors, fold, regime, factory))
                results.append(row)
                print(json.dumps(row), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print("\nmean over folds (exact match / micro-F1, %):")
    for domain in args.domains:
        for regime in args.regimes:
            got = [r for r in results if r["domain"] == domain and r["regime"] == regime]
            line = [f"{domain:8s} {regime:4s}"]
            for name in ("fixed", "micro_f1", "exact_match"):
                ex = np.mean([r[f"{name}_exact"] for r in got])
                f1 = np.mean([r[f"{name}_micro_f1"] for r in got])
                line.append(f"{name}: {ex:.1f} / {f1:.1f}")
            print("  ".join(line))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
