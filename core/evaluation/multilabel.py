"""Multi-label evaluation of the head (:func:`evaluate_head`), which decides a multi-label
project's label sets in every space (a version's, or one fitted on the frozen vectors): on the
test split, or by cross-validation with the one fold splitter; the metrics of
:func:`core.multilabel.metrics.multilabel_report` (primary: micro-F1), with ``accuracy`` = exact
match for the history table.

Example:
    >>> import numpy as np
    >>> x = np.eye(4, dtype=np.float32)
    >>> y = [("a",), ("b",), ("a", "b"), ()]
    >>> metrics, head = evaluate_head(x, y, x, y, epochs=60)
    >>> metrics["primary"], head.intents
    ('micro_f1', ('a', 'b'))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from core.evaluation.data import CV_FOLDS
from core.folds import fold_assignments
from core.multilabel.head import HeadConfig, MultiLabelHead
from core.multilabel.metrics import multilabel_report
from core.multilabel.thresholds import DEFAULT_THRESHOLD
from core.multilabel.tuning import fit_head

LabelSets = Sequence[tuple[str, ...]]


def _fit(
    vectors: np.ndarray, labels: LabelSets, threshold: float, tune: bool, epochs: int | None
) -> MultiLabelHead:
    if epochs is not None:  # a smaller head for examples and tests
        return MultiLabelHead(HeadConfig(threshold=threshold, epochs=epochs)).fit(vectors, labels)
    return fit_head(vectors, labels, threshold=threshold, tune=tune)


def evaluate_head(
    train_vecs: np.ndarray,
    train_labels: LabelSets,
    test_vecs: np.ndarray,
    test_labels: LabelSets,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    tune: bool = False,
    folds: int = CV_FOLDS,
    epochs: int | None = None,
) -> tuple[dict[str, Any], MultiLabelHead]:
    """Fit a head on the train vectors and score it on the test ones (or by ``folds``-fold
    cross-validation of train when there is no test row). Returns (metrics, the head fitted on all
    of train)."""
    head = _fit(train_vecs, train_labels, threshold, tune, epochs)
    if len(test_vecs):
        metrics = multilabel_report(list(test_labels), head.predict(test_vecs))
    else:
        assign = fold_assignments(train_labels, folds)
        gold: list[tuple[str, ...]] = []
        pred: list[tuple[str, ...]] = []
        for f in range(folds):
            inner, outer = np.flatnonzero(assign != f), np.flatnonzero(assign == f)
            if not len(outer):
                continue
            h = _fit(
                train_vecs[inner], [train_labels[int(i)] for i in inner], threshold, tune, epochs
            )
            gold += [train_labels[int(i)] for i in outer]
            pred += h.predict(train_vecs[outer])
        metrics = multilabel_report(gold, pred)
    metrics["accuracy"] = metrics["exact_match"]  # the history table's headline column
    metrics["n"] = len(test_labels) if len(test_vecs) else len(train_labels)
    metrics["multi_label"] = True
    metrics["threshold"] = head.thresholds.global_threshold
    return metrics, head
