"""The multi-label decision without a head: every intent whose k-NN score reaches one threshold,
calibrated out of fold over the labelled pool as the single-label out-of-scope thresholds are.

A multi-label live pool decides this way only until the head fitted on its frozen vectors lands
(:mod:`app.serving.pool_heads`), as do bundles written before such heads: the Predictor takes each
intent whose score (:meth:`~core.retrieval.predictor.Predictor.rank`: nearest example and
prototype, with the anchors) reaches ``thresholds["default"]``. A fixed 0.5 (a probability's midpoint carried over to
cosine scores) took most intents of most questions in a frozen encoder's space, where every
in-domain sentence scores 0.4-0.7. Here each labelled example is ranked by the Predictor over the
other folds (:meth:`~core.retrieval.predictor.Predictor.fold`: the scores a new question gets),
and the threshold is the one under which those out-of-fold label sets score best, by micro-F1 (the
multi-label primary metric) unless ``criterion="exact_match"``; ``bench/multilabel_knn.py``
measured both on NLU++.

Example:
    >>> import numpy as np
    >>> from core.retrieval.factory import vector_pool
    >>> v = np.array([[1, 0, 0], [0.9, 0.1, 0], [0, 1, 0], [0.1, 0.9, 0], [0.7, 0.7, 0.1],
    ...               [0.6, 0.8, 0]])
    >>> sets = [("a",), ("a",), ("b",), ("b",), ("a", "b"), ("a", "b")]
    >>> t = calibrate_knn_threshold(vector_pool(v, sets), folds=2)
    >>> 0.5 < t < 1
    True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.folds import fold_assignments
from core.retrieval.predictor import Predictor

CALIBRATION_FOLDS = 5
CRITERIA = ("micro_f1", "exact_match")
DEFAULT_CRITERION = "micro_f1"

Scored = tuple[tuple[str, ...], dict[str, float]]


def out_of_fold_label_scores(
    predictor: Predictor, *, folds: int = CALIBRATION_FOLDS, seed: int = 0
) -> list[Scored]:
    """Each pool example's label set and every intent's score for it from the other folds (an
    intent the fold's Predictor does not rank is left out: it is never taken)."""
    ids, _, sets, vectors = predictor.index.examples()
    if len(ids) < 2:
        return []
    folds = min(folds, len(ids))
    assign = fold_assignments(sets, folds, seed=seed)
    out: list[Scored] = []
    for f in range(folds):
        held = np.flatnonzero(assign == f)
        if not len(held):
            continue
        pool = predictor.fold([ids[i] for i in np.flatnonzero(assign != f)])
        for i, pred in zip(held, pool.rank(vectors[held], show=0), strict=True):
            out.append((tuple(sets[i]), {s.intent: s.score for s in pred.intents}))
    return out


def choose_knn_threshold(scored: Sequence[Scored], criterion: str = DEFAULT_CRITERION) -> float:
    """The threshold (one of the scores) under which the label sets ``{intent: score >= t}``
    score best by ``criterion`` against the gold sets (ties: the higher threshold).

    Example:
        >>> choose_knn_threshold([(("a",), {"a": 0.8, "b": 0.6}), (("b",), {"b": 0.7, "a": 0.5})])
        0.7
    """
    if criterion not in CRITERIA:
        raise ValueError(f"Unknown criterion {criterion!r}: use one of {', '.join(CRITERIA)}.")
    candidates = np.unique([s for _, scores in scored for s in scores.values()])
    if not len(candidates):
        raise ValueError("No scores to calibrate a threshold from.")
    if criterion == "micro_f1":
        values = np.array([s for _, scores in scored for s in scores.values()])
        gold = np.array([n in g for g, scores in scored for n in scores], dtype=bool)
        order = np.argsort(values, kind="stable")
        values, gold = values[order], gold[order]
        # pairs scoring >= t, counted from the top: tp and fp of each candidate threshold
        taken = len(values) - np.searchsorted(values, candidates, side="left")
        gold_above = np.concatenate([[0], np.cumsum(gold[::-1])])
        tp = gold_above[taken]
        fp = taken - tp
        total = sum(len(g) for g, _ in scored)
        quality = 2 * tp / np.maximum(1, tp + fp + total)  # 2tp / (2tp + fp + fn)
    else:  # exact: every gold intent reaches t (t <= low), no other intent does (high < t)
        low = np.array([min((sc.get(n, -np.inf) for n in g), default=np.inf) for g, sc in scored])
        high = np.array(
            [max((v for n, v in sc.items() if n not in g), default=-np.inf) for g, sc in scored]
        )
        ok = high < low
        highs, lows = np.sort(high[ok]), np.sort(low[ok])
        below = np.searchsorted(highs, candidates, side="left")  # rows with high < t
        missed = np.searchsorted(lows, candidates, side="left")  # rows with low < t
        quality = (below - missed) / len(scored)
    best = np.flatnonzero(quality >= quality.max() - 1e-12)
    return float(candidates[best[-1]])


def calibrate_knn_threshold(
    predictor: Predictor,
    *,
    folds: int = CALIBRATION_FOLDS,
    seed: int = 0,
    criterion: str = DEFAULT_CRITERION,
) -> float | None:
    """The no-head multi-label threshold of ``predictor``'s pool (see the module doc; None:
    fewer than two examples, nothing to score out of fold)."""
    scored = out_of_fold_label_scores(predictor, folds=folds, seed=seed)
    return choose_knn_threshold(scored, criterion) if scored else None
