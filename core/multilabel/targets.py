"""Targets for the multi-label head: the intent vocabulary, 0/1 target matrices and
Multi-ConvFiT's multi-label label smoothing."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

LabelSets = Sequence[Sequence[str]]


def intents_of(label_sets: LabelSets) -> tuple[str, ...]:
    """The sorted union of all labels."""
    return tuple(sorted({name for labels in label_sets for name in labels}))


def binary_targets(label_sets: LabelSets, intents: Sequence[str]) -> np.ndarray:
    """``(n, C)`` float32 0/1 matrix; raises ``ValueError`` for labels outside ``intents``.

    Example:
        >>> binary_targets([("b",), ()], ["a", "b"]).tolist()
        [[0.0, 1.0], [0.0, 0.0]]
    """
    col = {name: i for i, name in enumerate(intents)}
    if len(col) != len(intents):
        raise ValueError("intents contain duplicates")
    y = np.zeros((len(label_sets), len(intents)), dtype=np.float32)
    for row, labels in enumerate(label_sets):
        for name in labels:
            if name not in col:
                raise ValueError(f"label {name!r} (example {row}) is not one of the head's intents")
            y[row, col[name]] = 1.0
    return y


def smooth_targets(y: np.ndarray, ls: float) -> np.ndarray:
    """Multi-label label smoothing (Multi-ConvFiT eq. 1).

    A positive becomes ``ls``; a negative becomes ``(1 - ls)·M/|C|`` where ``M`` is the number of
    true labels of that example and ``|C|`` the number of intents. An example with no intent keeps
    all-zero targets (``M = 0``).

    Example:
        >>> smooth_targets(np.array([[1.0, 0.0, 0.0, 1.0]]), 0.9).astype(float).round(3).tolist()
        [[0.9, 0.05, 0.05, 0.9]]
    """
    if not 0.0 < ls <= 1.0:
        raise ValueError(f"label smoothing must be in (0, 1], got {ls!r}")
    y = np.asarray(y, dtype=np.float32)
    if y.ndim != 2 or y.shape[1] == 0:
        raise ValueError(f"targets must be (n, C) with C >= 1, got {y.shape}")
    m = y.sum(axis=1, keepdims=True)
    negative = (1.0 - ls) * m / y.shape[1]
    return np.where(y > 0.5, np.float32(ls), negative).astype(np.float32)
