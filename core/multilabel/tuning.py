"""Fitting the multi-label head the way a retrain does: fit on the pool, with one θ for every
intent. Per-intent θs tuned by cross-validation (with the one fold splitter of
:mod:`core.folds`) are no longer a retrain option (they did not win on NLU++:
``bench/RESULTS.md``); ``tune`` re-fits them for a version that recorded them and for
``bench/multilabel.py --per-intent``."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from core.folds import fold_assignments
from core.multilabel.head import HeadConfig, LabelSets, MultiLabelHead, Progress, _as_vectors
from core.multilabel.targets import binary_targets, intents_of
from core.multilabel.thresholds import (
    DEFAULT_GRID,
    DEFAULT_MIN_SUPPORT,
    DEFAULT_THRESHOLD,
    Thresholds,
    thresholds_from_probabilities,
)

TUNING_FOLDS = 5


def fit_head(
    vectors: np.ndarray,
    label_sets: LabelSets,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    tune: bool = False,
    folds: int = TUNING_FOLDS,
    should_cancel: Callable[[], bool] | None = None,
) -> MultiLabelHead:
    """The paper's head (512 ReLU, dropout 0.4, BCE with label smoothing, AdamW 3e-3) on frozen
    vectors; per-intent θ tuned by ``folds``-fold cross-validation when ``tune``.
    ``should_cancel``: polled each epoch (:meth:`MultiLabelHead.fit`)."""
    config = HeadConfig(threshold=threshold)
    head = MultiLabelHead(config).fit(vectors, label_sets, should_cancel=should_cancel)
    if tune and len(vectors) >= folds:
        head.thresholds = tune_thresholds(
            vectors, label_sets, head.intents, config=config, folds=folds
        )
    return head


def tune_thresholds(
    vectors: np.ndarray,
    label_sets: LabelSets,
    intents: Sequence[str] | None = None,
    *,
    config: HeadConfig | None = None,
    folds: int = 5,
    grid: Sequence[float] = DEFAULT_GRID,
    min_support: int = DEFAULT_MIN_SUPPORT,
    progress: Progress | None = None,
) -> Thresholds:
    """Per-intent θ by k-fold cross-validation on the labelled pool.

    The head is fitted ``folds`` times, each time predicting the held-out fold; on the pooled
    out-of-fold probabilities each intent gets the grid θ with its best F1. Intents with fewer than
    ``min_support`` examples keep the global θ (``config.threshold``).

    Example:
        >>> head.thresholds = tune_thresholds(vecs, label_sets, folds=5)  # doctest: +SKIP
    """
    cfg = config or HeadConfig()
    x = _as_vectors(vectors)
    if len(x) != len(label_sets):
        raise ValueError(f"{len(x)} vectors but {len(label_sets)} label sets")
    if not 2 <= folds <= len(x):
        raise ValueError(f"folds must be between 2 and the number of examples ({len(x)})")
    names = tuple(intents) if intents is not None else intents_of(label_sets)
    y = binary_targets(label_sets, names)
    fold_of = fold_assignments(label_sets, folds, seed=cfg.seed)
    oof = np.zeros_like(y)
    for k in range(folds):
        test = fold_of == k
        train = ~test
        head = MultiLabelHead(cfg).fit(
            x[train], [label_sets[int(i)] for i in np.flatnonzero(train)], names
        )
        oof[test] = head.predict_proba(x[test])
        if progress is not None:
            progress(k + 1, folds)
    return thresholds_from_probabilities(
        oof, y, names, global_threshold=cfg.threshold, grid=grid, min_support=min_support
    )
