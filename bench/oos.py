"""Benchmark of out-of-scope detection on CLINC150 (10-shot train, thresholds chosen on val only).

Protocol: the pool (or the head) is ``train_10shot_seed0.csv``; thresholds are chosen on
``val.csv`` (in scope) + ``val_oos.csv`` with the app's own rule
(:func:`core.evaluation.oos.thresholds_from_scores`: the target in-scope recall is a floor, the
out-of-scope examples move the threshold below it); scored on ``test.csv`` + ``test_oos.csv``.
A ``pool`` row calibrates as the app does with no validation data: out-of-fold scores of the
10-shot pool itself (:func:`core.evaluation.oos.calibrate`), ``val_oos`` as the designer's
out-of-scope examples.

Metrics: in-scope accuracy (a rejected in-scope question counts as wrong), OOS recall, OOS
precision (rejected questions that are really out of scope), AUROC of the OOS score (the top
score minus its threshold, so per-intent thresholds count), in-scope recall (accepted).

Peers: a logistic-regression head on the same vectors with a max-probability threshold (the same
rule chooses it), and SetFit's probability threshold when ``setfit`` is installed.

Rows per decision rule of the pool (``--rules``: the nearest example alone, or with the
intent's prototype, the default), one project-wide threshold each (per-intent thresholds, and
per-intent ones shrunk toward it, lost on BANKING77 and CLINC150 and left the product:
``bench/oos_calibration.py``, bench/RESULTS.md).

Usage:
    python -m bench.oos --encoders frozen,tuned --targets 0.9,0.95,0.98
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench._common import offline_models
from bench.csvdata import read_csv

ROOT = Path(__file__).resolve().parents[1]

offline_models()

from core.evaluation.oos import calibrate, thresholds_from_scores  # noqa: E402
from core.retrieval.factory import vector_pool  # noqa: E402
from core.retrieval.knn import DEFAULT_RULE, RULES  # noqa: E402

logger = logging.getLogger("bench.oos")


def knn_top(
    pool: np.ndarray, labels: list[str], queries: np.ndarray, rule: str = DEFAULT_RULE
) -> tuple[list[str], np.ndarray]:
    """Top intent and score of each query by the predictor's rule (``rule``)."""
    preds = vector_pool(pool, labels, rule=rule).rank(queries, show=0, depth=20)
    return [p.top or "" for p in preds], np.array([p.score for p in preds])


def split_scores(
    pred: list[str], score: np.ndarray, gold: list[str] | None
) -> dict[str, list[float]]:
    """Scores by predicted intent: the correct in-scope ones (``gold`` given) or all (OOS)."""
    out: dict[str, list[float]] = {}
    for i, (p, s) in enumerate(zip(pred, score, strict=True)):
        if gold is None or gold[i] == p:
            out.setdefault(p, []).append(float(s))
    return out


def metrics(
    pred: list[str],
    score: np.ndarray,
    gold: list[str],
    oos_pred: list[str],
    oos_score: np.ndarray,
    thresholds: dict[str, float],
) -> dict[str, float]:
    from sklearn.metrics import roc_auc_score

    def margin(p: list[str], s: np.ndarray) -> np.ndarray:
        return s - np.array([thresholds.get(x, thresholds["default"]) for x in p])

    m_in, m_oos = margin(pred, score), margin(oos_pred, oos_score)
    accepted = m_in >= 0
    rejected_oos = m_oos < 0
    correct = np.array([p == g for p, g in zip(pred, gold, strict=True)])
    n_rejected = int((~accepted).sum() + rejected_oos.sum())
    y = np.r_[np.zeros(len(m_in)), np.ones(len(m_oos))]
    return {
        "in_acc": float((accepted & correct).mean()),
        "in_recall": float(accepted.mean()),
        "oos_recall": float(rejected_oos.mean()),
        "oos_precision": float(rejected_oos.sum() / n_rejected) if n_rejected else 0.0,
        "auroc": float(roc_auc_score(y, -np.r_[m_in, m_oos])),
        "acc_no_oos": float(correct.mean()),
    }


def rows_for(
    name: str,
    data: dict[str, Any],
    vecs: dict[str, np.ndarray],
    targets: list[float],
    rules: list[str],
) -> list[dict[str, Any]]:
    """Per decision rule: the project-wide threshold chosen on val and from the pool alone as
    the app does, then the LR head's (per-intent thresholds left the product: bench/RESULTS.md)."""
    tr_y, va_y, te_y = data["train"][1], data["val"][1], data["test"][1]
    out = []
    for rule in rules:
        te = knn_top(vecs["train"], tr_y, vecs["test"], rule)
        te_oos = knn_top(vecs["train"], tr_y, vecs["test_oos"], rule)
        va = knn_top(vecs["train"], tr_y, vecs["val"], rule)
        va_oos = knn_top(vecs["train"], tr_y, vecs["val_oos"], rule)
        own, neg = split_scores(*va, va_y), split_scores(*va_oos, None)
        for target in targets:
            _, th, _ = thresholds_from_scores(own, neg, target)
            row = {"encoder": name, "rule": rule, "method": "val global", "target": target}
            out.append({**row, **metrics(*te, te_y, *te_oos, th)})
            cal = calibrate(
                vecs["train"],
                [(y,) for y in tr_y],
                out_of_scope=vecs["val_oos"],
                target_recall=target,
                rule=rule,
            )
            row = {"encoder": name, "rule": rule, "method": "pool global", "target": target}
            out.append({**row, **metrics(*te, te_y, *te_oos, cal.thresholds)})

    from sklearn.linear_model import LogisticRegression

    clf = LogisticRegression(max_iter=2000, C=10.0).fit(vecs["train"], tr_y)

    def lr_top(x: np.ndarray) -> tuple[list[str], np.ndarray]:
        proba = clf.predict_proba(x)
        return [str(c) for c in clf.classes_[proba.argmax(1)]], proba.max(1)

    lr_te, lr_te_oos = lr_top(vecs["test"]), lr_top(vecs["test_oos"])
    lr_own = split_scores(*lr_top(vecs["val"]), va_y)
    lr_neg = split_scores(*lr_top(vecs["val_oos"]), None)
    for target in targets:
        _, th, _ = thresholds_from_scores(lr_own, lr_neg, target)
        row = {"encoder": name, "rule": "LR max-proba", "method": "val global", "target": target}
        out.append({**row, **metrics(*lr_te, te_y, *lr_te_oos, th)})
    return out


def table(results: list[dict[str, Any]]) -> str:
    head = (
        f"{'encoder':8} {'rule':17} {'method':20} {'target':>6} {'in-acc':>7} {'in-rec':>7} "
        f"{'oos-rec':>7} {'oos-prec':>8} {'auroc':>6} {'acc(no oos)':>11}"
    )
    lines = [head, "-" * len(head)]
    for r in results:
        lines.append(
            f"{r['encoder']:8} {r['rule']:17} {r['method']:20} {r['target']:>6.2f} {r['in_acc']:>7.3f} "
            f"{r['in_recall']:>7.3f} {r['oos_recall']:>7.3f} {r['oos_precision']:>8.3f} "
            f"{r['auroc']:>6.3f} {r['acc_no_oos']:>11.3f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "clinc150")
    ap.add_argument("--encoders", default="frozen,tuned")
    ap.add_argument("--targets", default="0.9,0.95,0.98")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rules", default=",".join(RULES), help="decision rules of the pool")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--vectors", type=Path, default=None, help="keep/reuse vectors here")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "oos.json")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    from core.encoding.registry import load_encoder
    from core.training import TrainConfig, train_encoder

    files = {
        "train": f"train_10shot_seed{args.seed}.csv",
        "val": "val.csv",
        "val_oos": "val_oos.csv",
        "test": "test.csv",
        "test_oos": "test_oos.csv",
    }
    data = {k: read_csv(args.data / f) for k, f in files.items()}
    targets = [float(t) for t in args.targets.split(",")]
    rules = [r for r in args.rules.split(",") if r]
    results: list[dict[str, Any]] = []
    notes: list[str] = []
    for name in args.encoders.split(","):
        started = time.monotonic()
        saved = args.vectors / f"{name}-seed{args.seed}.npz" if args.vectors else None
        if saved is not None and saved.is_file():  # re-score without re-training
            with np.load(saved) as z:
                vecs = {k: z[k] for k in files}
            results += rows_for(name, data, vecs, targets, rules)
            print(table(results), flush=True)
            continue
        if name == "frozen":
            enc: Any = load_encoder("minilm", device=args.device)
        elif name == "tuned":
            tr_x, tr_y = data["train"]
            trained = train_encoder(
                "minilm",
                tr_x,
                [(y,) for y in tr_y],
                TrainConfig(seed=args.seed),
                device=args.device,
            )
            enc = trained.encoder()
            notes.append(
                f"tuned: fast method, seed {args.seed}, "
                f"{time.monotonic() - started:.0f} s of training"
            )
        else:
            raise SystemExit(f"unknown encoder {name!r}: use frozen or tuned")
        vecs = {k: np.asarray(enc.encode(v[0], batch_size=128)) for k, v in data.items()}
        logger.info("%s encoded in %.0f s", name, time.monotonic() - started)
        if saved is not None:
            saved.parent.mkdir(parents=True, exist_ok=True)
            np.savez(saved, **vecs)
        results += rows_for(name, data, vecs, targets, rules)
        print(table(results), flush=True)
    if importlib.util.find_spec("setfit") is None:
        notes.append(
            "SetFit is not installed (pip list): its probability-threshold row is skipped."
        )
    print("\n".join(notes))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"protocol": files, "results": results, "notes": notes}
    args.out.write_text(json.dumps(payload, indent=2), encoding="utf-8")
    print(json.dumps(payload))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
