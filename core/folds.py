"""The one fold splitter: stratified by label set, seeded, every row in exactly one fold.

Used by single-label cross-validation, multi-label cross-validation, the multi-label head's
threshold tuning and every out-of-fold calibration, so "5-fold" means the same split everywhere.
A leaf: it imports nothing of the project, so every package can use it.

Rows are grouped by their label set (a single intent, a multi-label set, or no intent); each group
is shuffled with the seed and dealt round-robin over the folds, continuing where the previous group
stopped so the folds stay the same size.

Example:
    >>> fold_assignments([("a",), ("a",), ("b",), ("b",)], 2).tolist()
    [0, 1, 0, 1]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _key(labels: str | Sequence[str]) -> tuple[str, ...]:
    return (labels,) if isinstance(labels, str) else tuple(sorted(labels))


def fold_assignments(
    labels: Sequence[str] | Sequence[Sequence[str]], folds: int, *, seed: int = 0
) -> np.ndarray:
    """The fold (``0 .. folds-1``) of each row.

    Args:
        labels: one intent name, or one label set, per row.
        folds: how many folds (at least 2, at most the number of rows).
        seed: the shuffle within each label group.

    Raises:
        ValueError: with fewer than 2 folds or fewer rows than folds.
    """
    n = len(labels)
    if folds < 2:
        raise ValueError(f"folds must be at least 2, got {folds}.")
    if n < folds:
        raise ValueError(f"Need at least {folds} labelled examples for {folds}-fold evaluation.")
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, lab in enumerate(labels):
        groups.setdefault(_key(lab), []).append(i)
    rng = np.random.default_rng(seed)
    assign = np.empty(n, dtype=np.int64)
    start = 0
    for key in sorted(groups):
        idx = np.asarray(groups[key])
        rng.shuffle(idx)
        assign[idx] = (np.arange(len(idx)) + start) % folds
        start += len(idx)
    return assign
