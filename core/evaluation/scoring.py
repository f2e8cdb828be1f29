"""Scoring a model the way it predicts, with one rule for every caller.

Single-label rule (k-NN): a prediction is **correct when it is any of the row's gold intents**. A
test row with two intents is a hit when the model names either; for the confusion matrix and the
per-intent numbers such a row counts under the predicted intent when that is one of its intents,
else under its first (alphabetical) intent (:func:`scoring_gold`). The version history, the live
evaluation and the benchmarks all score through :func:`score_predictions`, so one model shows one
accuracy. The primary metric is ``accuracy``.

Multi-label rule (the head): micro-F1 over intents is primary, with macro-F1 and exact match
(:mod:`core.multilabel.metrics`); ``accuracy`` is set to the exact match for the history table.

Every evaluator returns one shape: ``primary`` (the name of the headline metric), that metric,
``n``, ``per_intent``, and for single-label ``confusion``, ``silhouette`` and ``k``; cross-validation
adds ``folds``. The pool for k-NN may hold multi-intent examples: they vote for each of their
intents, exactly as the live pool does.

Single-label predictions come from a :class:`~core.retrieval.predictor.Predictor` (its top
intent), built by the version's :class:`~core.retrieval.factory.PredictorFactory`, so a version's
recorded accuracy is the accuracy of the Predictor that serves it.

Example:
    >>> import numpy as np
    >>> pool = PredictorFactory.for_vectors(2).build(["", ""], ["a", "b"], vectors=np.eye(2))
    >>> test = np.array([[0.9, 0.1], [0.2, 0.8]], dtype=np.float32)
    >>> evaluate_knn(pool, test, [("a",), ("b", "c")])["accuracy"]
    1.0
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from core.folds import fold_assignments
from core.retrieval.factory import PredictorFactory
from core.retrieval.predictor import Predictor

logger = logging.getLogger(__name__)

Gold = str | Sequence[str]  # one intent, or the label set of a row


def _label_set(gold: Gold) -> tuple[str, ...]:
    return (gold,) if isinstance(gold, str) else tuple(sorted(gold))


def scoring_gold(gold: Gold, predicted: str) -> str:
    """The gold intent a row is scored against: the predicted one when it is among the row's
    intents (a hit), else the row's first intent.

    Example:
        >>> scoring_gold(("cancel", "refund"), "refund"), scoring_gold(("cancel", "refund"), "x")
        ('refund', 'cancel')
    """
    labels = _label_set(gold)
    if not labels:
        raise ValueError("A scored row needs at least one gold intent.")
    return predicted if predicted in labels else labels[0]


def knn_predict(
    predictor: Predictor,
    test_vecs: np.ndarray,
    *,
    exclude_ids: Sequence[int | None] | None = None,
) -> list[str]:
    """The top intent of each test vector as ``predictor`` ranks it (its pool, anchors, ``k``
    and rule: :meth:`~core.retrieval.predictor.Predictor.rank`, through
    :meth:`~core.retrieval.predictor.Predictor.tops`); ``""`` when it ranks none."""
    if len(predictor.index) == 0 and not predictor.index.anchors():
        raise ValueError("The labelled pool is empty: nothing to compare against.")
    test = np.asarray(test_vecs, dtype=np.float32)
    found = predictor.tops(test, exclude_ids=exclude_ids)  # what rank() puts first, at once
    return [top if top is not None else "" for top in found.intents]


def _silhouette(vecs: np.ndarray, labels: Sequence[str]) -> float | None:
    from sklearn.metrics import silhouette_score

    n_labels = len(set(labels))
    if n_labels < 2 or n_labels >= len(labels):
        return None
    sample = min(len(labels), 5000)
    return float(
        silhouette_score(vecs, list(labels), metric="cosine", sample_size=sample, random_state=0)
    )


def score_predictions(
    gold: Sequence[Gold], predicted: Sequence[str], labels: Sequence[str] | None = None
) -> dict[str, Any]:
    """Accuracy, macro-F1, per-intent metrics and confusion matrix of single-label predictions,
    by the rule of this module (a hit = the prediction is any gold intent of the row)."""
    from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

    if len(gold) != len(predicted):
        raise ValueError("gold and predicted differ in length.")
    if len(gold) == 0:
        raise ValueError("Nothing to evaluate: no test examples.")
    y_true = [scoring_gold(g, p) for g, p in zip(gold, predicted, strict=True)]
    y_pred = list(predicted)
    names = sorted(set(labels or ()) | set(y_true) | set(y_pred))
    p, r, f, s = precision_recall_fscore_support(y_true, y_pred, labels=names, zero_division=0)
    true_names = sorted(set(y_true))
    macro = float(np.mean([f[names.index(n)] for n in true_names]))
    matrix = confusion_matrix(y_true, y_pred, labels=names)
    return {
        "primary": "accuracy",
        "accuracy": float(np.mean(np.asarray(y_true) == np.asarray(y_pred))),
        "macro_f1": macro,
        "n": len(y_true),
        "per_intent": {
            n: {
                "precision": float(p[i]),
                "recall": float(r[i]),
                "f1": float(f[i]),
                "support": int(s[i]),
            }
            for i, n in enumerate(names)
        },
        "confusion": {"labels": names, "matrix": [[int(v) for v in row] for row in matrix]},
    }


def evaluate_knn(
    predictor: Predictor,
    test_vecs: np.ndarray,
    test_labels: Sequence[Gold],
    predicted: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Single-label evaluation of a Predictor on test vectors (by its encoder).

    Args:
        predictor: the version's Predictor over the labelled pool (from its
            :class:`~core.retrieval.factory.PredictorFactory`: the anchors, ``k`` and rule that
            serve).
        test_vecs: ``(m, d)`` vectors to classify.
        test_labels: their gold intent (or label set).
        predicted: the Predictor's top intent of each test vector (:func:`knn_predict`), when
            the caller ranked them already.

    Returns:
        The metrics of :func:`score_predictions` plus ``silhouette`` (cosine, on the test vectors;
        ``None`` when undefined) and ``k``.

    Example:
        >>> import numpy as np
        >>> p = PredictorFactory.for_vectors(2).build(["", ""], ["a", "b"], vectors=np.eye(2))
        >>> evaluate_knn(p, np.array([[0.9, 0.1]]), ["a"])["accuracy"]
        1.0
    """
    if len(test_vecs) != len(test_labels):
        raise ValueError("test_vecs and test_labels differ in length.")
    preds = list(predicted) if predicted is not None else knn_predict(predictor, test_vecs)
    if len(preds) != len(test_labels):
        raise ValueError("predicted and test_labels differ in length.")
    out = score_predictions(test_labels, preds)
    truth = [scoring_gold(g, p) for g, p in zip(test_labels, preds, strict=True)]
    out["silhouette"] = _silhouette(np.asarray(test_vecs, dtype=np.float32), truth)
    out["k"] = predictor.k
    return out


def cross_validate_knn(
    factory: PredictorFactory,
    vecs: np.ndarray,
    labels: Sequence[Gold],
    folds: int = 5,
    seed: int = 0,
    assign: np.ndarray | None = None,
) -> dict[str, Any]:
    """Leave-fold-out evaluation of a labelled pool with no test split.

    Each row goes to one fold (:func:`core.folds.fold_assignments`); each fold is
    classified by ``factory``'s Predictor over the other folds (the same anchors, ``k`` and
    rule as the one that serves), and the pooled predictions are scored like
    :func:`evaluate_knn` (silhouette on all vectors). ``assign`` gives the folds instead (one per
    row, ``0 .. folds-1``): a what-if that renames intents keeps the folds of the real labels, so
    the two estimates differ by the renaming only.

    Raises:
        ValueError: with fewer than 2 folds or fewer examples than folds.
    """
    n = len(labels)
    if n != len(vecs):
        raise ValueError("vecs and labels differ in length.")
    if assign is None:
        assign = fold_assignments(labels, folds, seed=seed)
    elif len(assign) != n:
        raise ValueError("assign and labels differ in length.")
    factory = factory.prepared()
    data = np.asarray(vecs, dtype=np.float32)
    sets = [_label_set(y) for y in labels]
    preds: list[str] = [""] * n
    for f in range(folds):
        test = [int(i) for i in np.flatnonzero(assign == f)]
        train = [int(i) for i in np.flatnonzero(assign != f)]
        if not test or not train:
            continue
        pool = factory.build([""] * len(train), [sets[i] for i in train], vectors=data[train])
        for i, p in zip(test, knn_predict(pool, data[test]), strict=True):
            preds[i] = p
    out = score_predictions(list(labels), preds)
    truth = [scoring_gold(g, p) for g, p in zip(labels, preds, strict=True)]
    out["silhouette"] = _silhouette(data, truth)
    out["k"] = factory.k
    out["folds"] = folds
    return out
