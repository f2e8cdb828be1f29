"""k-NN evaluation of an encoder's space: the numbers shown beside every model version.

``evaluate_knn`` scores test vectors against a labelled pool with :class:`core.retrieval.knn.KnnIndex` (the
same rule as inference) and returns plain JSON types: accuracy (the primary metric), macro-F1,
per-intent precision/recall/F1/support, the confusion matrix and the cosine silhouette of the test
vectors. ``cross_validate_knn`` does the same for projects without a test split (each fold is
scored against the other folds).

Example:
    >>> import numpy as np
    >>> pool = np.eye(2, dtype=np.float32)
    >>> test = np.array([[0.9, 0.1], [0.2, 0.8]], dtype=np.float32)
    >>> evaluate_knn(pool, ["a", "b"], test, ["a", "b"])["accuracy"]
    1.0
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from core.retrieval.knn import KnnIndex

logger = logging.getLogger(__name__)


def knn_predict(
    train_vecs: np.ndarray, train_labels: Sequence[str], test_vecs: np.ndarray, k: int = 1
) -> list[str]:
    """Predicted intent of each test vector by the k-NN rule of :class:`KnnIndex`."""
    train = np.asarray(train_vecs, dtype=np.float32)
    test = np.asarray(test_vecs, dtype=np.float32)
    if len(train) == 0:
        raise ValueError("The labelled pool is empty: nothing to compare against.")
    if len(train) != len(train_labels):
        raise ValueError("train_vecs and train_labels differ in length.")
    index = KnnIndex(train.shape[1])
    index.add(list(range(len(train))), train, [""] * len(train), [(y,) for y in train_labels])
    preds = index.classify(test, k=k, show=0, depth=max(50, 10 * k))
    return [p.top if p.top is not None else "" for p in preds]


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
    y_true: Sequence[str], y_pred: Sequence[str], labels: Sequence[str] | None = None
) -> dict[str, Any]:
    """Accuracy, macro-F1, per-intent metrics and confusion matrix of single-label predictions."""
    from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

    if len(y_true) != len(y_pred):
        raise ValueError("y_true and y_pred differ in length.")
    if len(y_true) == 0:
        raise ValueError("Nothing to evaluate: no test examples.")
    names = sorted(set(labels) if labels is not None else set(y_true) | set(y_pred))
    names = sorted(set(names) | set(y_true) | set(y_pred))
    p, r, f, s = precision_recall_fscore_support(
        list(y_true), list(y_pred), labels=names, zero_division=0
    )
    true_names = sorted(set(y_true))
    macro = float(np.mean([f[names.index(n)] for n in true_names]))
    matrix = confusion_matrix(list(y_true), list(y_pred), labels=names)
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
    train_vecs: np.ndarray,
    train_labels: Sequence[str],
    test_vecs: np.ndarray,
    test_labels: Sequence[str],
    k: int = 1,
) -> dict[str, Any]:
    """Single-label k-NN evaluation from vectors.

    Args:
        train_vecs: ``(n, d)`` vectors of the labelled pool.
        train_labels: the pool's intent names.
        test_vecs: ``(m, d)`` vectors to classify.
        test_labels: their true intent names.
        k: examples per intent that make its score (1 = ConvFiT's 1-NN).

    Returns:
        ``{"primary": "accuracy", "accuracy", "macro_f1", "n", "per_intent": {name: {"precision",
        "recall", "f1", "support"}}, "confusion": {"labels", "matrix"}, "silhouette", "k"}``;
        ``silhouette`` (cosine, on the test vectors) is ``None`` when undefined.

    Example:
        >>> import numpy as np
        >>> pool = np.eye(2, dtype=np.float32)
        >>> evaluate_knn(pool, ["a", "b"], np.array([[0.9, 0.1]]), ["a"])["accuracy"]
        1.0
    """
    if len(test_vecs) != len(test_labels):
        raise ValueError("test_vecs and test_labels differ in length.")
    preds = knn_predict(train_vecs, train_labels, test_vecs, k=k)
    out = score_predictions(test_labels, preds)
    out["silhouette"] = _silhouette(np.asarray(test_vecs, dtype=np.float32), test_labels)
    out["k"] = k
    return out


def cross_validate_knn(
    vecs: np.ndarray,
    labels: Sequence[str],
    folds: int = 5,
    seed: int = 0,
    k: int = 1,
) -> dict[str, Any]:
    """Leave-fold-out k-NN evaluation of a labelled pool with no test split.

    Each example is assigned to one of ``folds`` folds (stratified by intent, seeded); each fold is
    classified against the pool of the other folds, and the pooled predictions are scored like
    :func:`evaluate_knn` (silhouette on all vectors).

    Raises:
        ValueError: with fewer than 2 folds or fewer examples than folds.
    """
    if folds < 2:
        raise ValueError(f"folds must be at least 2, got {folds}.")
    n = len(labels)
    if n != len(vecs):
        raise ValueError("vecs and labels differ in length.")
    if n < folds:
        raise ValueError(f"Need at least {folds} labelled examples for {folds}-fold evaluation.")
    rng = np.random.default_rng(seed)
    assign = np.empty(n, dtype=np.int64)
    by_label: dict[str, list[int]] = {}
    for i, y in enumerate(labels):
        by_label.setdefault(y, []).append(i)
    start = 0
    for name in sorted(by_label):
        idx = np.asarray(by_label[name])
        rng.shuffle(idx)
        assign[idx] = (np.arange(len(idx)) + start) % folds
        start += len(idx)
    data = np.asarray(vecs, dtype=np.float32)
    preds: list[str] = [""] * n
    for f in range(folds):
        test = [int(i) for i in np.flatnonzero(assign == f)]
        train = [int(i) for i in np.flatnonzero(assign != f)]
        if len(test) == 0:
            continue
        fold_preds = knn_predict(data[train], [labels[i] for i in train], data[test], k=k)
        for i, p in zip(test, fold_preds, strict=True):
            preds[i] = p
    out = score_predictions(list(labels), preds)
    out["silhouette"] = _silhouette(data, labels)
    out["k"] = k
    out["folds"] = folds
    return out
