"""Decision thresholds for multi-label intent detection: one global θ plus optional per-intent θs.

An intent is predicted when its probability is ``>= θ`` (Multi-ConvFiT: θ = 0.3 for every intent).
Per-intent thresholds are picked from out-of-fold probabilities (see
``core.multilabel.tune_thresholds``): for each intent the grid value with the best F1 wins; intents
with too few labelled examples keep the global θ. Everything here is plain numpy (no torch).

Example:
    >>> t = Thresholds(global_threshold=0.3, per_intent={"refund": 0.5})
    >>> t.vector(["cancel", "refund"]).tolist()
    [0.3, 0.5]
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.portable import above

logger = logging.getLogger(__name__)

DEFAULT_THRESHOLD = 0.3
DEFAULT_GRID: tuple[float, ...] = tuple(round(0.05 * i, 2) for i in range(1, 19))  # 0.05 .. 0.90
DEFAULT_MIN_SUPPORT = 3


def validate_threshold(value: float, name: str = "threshold") -> float:
    """Return ``value`` as a float if ``0 < value < 1``, else raise a ``ValueError`` that says why.

    Example:
        >>> validate_threshold(0.3)
        0.3
    """
    try:
        theta = float(value)
    except (TypeError, ValueError):
        raise ValueError(
            f"{name} must be a number strictly between 0 and 1, got {value!r}"
        ) from None
    if math.isnan(theta) or not 0.0 < theta < 1.0:
        raise ValueError(f"{name} must be strictly between 0 and 1 (exclusive), got {value!r}")
    return theta


@dataclass(frozen=True)
class Thresholds:
    """A global θ and per-intent overrides.

    Args:
        global_threshold: θ for every intent without an override (default 0.3, as in the paper).
        per_intent: intent name → θ; each validated like the global one.

    Example:
        >>> Thresholds(0.3, {"a": 0.6}).for_intent("a"), Thresholds().for_intent("b")
        (0.6, 0.3)
    """

    global_threshold: float = DEFAULT_THRESHOLD
    per_intent: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "global_threshold", validate_threshold(self.global_threshold, "global threshold")
        )
        clean = {
            str(k): validate_threshold(v, f"threshold for intent {k!r}")
            for k, v in self.per_intent.items()
        }
        object.__setattr__(self, "per_intent", clean)

    def for_intent(self, intent: str) -> float:
        return float(self.per_intent.get(intent, self.global_threshold))

    def vector(self, intents: Sequence[str]) -> np.ndarray:
        """The ``(C,)`` float64 θ for each intent, in the given order."""
        return np.asarray([self.for_intent(i) for i in intents], dtype=np.float64)

    def to_dict(self) -> dict[str, Any]:
        return {
            "global": self.global_threshold,
            "per_intent": dict(sorted(self.per_intent.items())),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Thresholds:
        unknown = set(data) - {"global", "per_intent"}
        if unknown:
            raise ValueError(f"unknown threshold keys: {sorted(unknown)}")
        return cls(
            float(data.get("global", DEFAULT_THRESHOLD)),
            {str(k): float(v) for k, v in dict(data.get("per_intent", {})).items()},
        )


ThresholdLike = float | Mapping[str, float] | Thresholds | None


def as_thresholds(value: ThresholdLike, default: float = DEFAULT_THRESHOLD) -> Thresholds:
    """Coerce a float, an ``{intent: θ}`` mapping, ``Thresholds`` or ``None`` into ``Thresholds``.

    Example:
        >>> as_thresholds(0.4).global_threshold
        0.4
    """
    if value is None:
        return Thresholds(default)
    if isinstance(value, Thresholds):
        return value
    if isinstance(value, Mapping):
        return Thresholds(default, dict(value))
    return Thresholds(float(value))


def _f1(pred: np.ndarray, gold: np.ndarray) -> float:
    tp = float(np.sum(pred & gold))
    denom = float(np.sum(pred)) + float(np.sum(gold))
    return 2.0 * tp / denom if denom > 0 else 0.0


def thresholds_from_probabilities(
    proba: np.ndarray,
    targets: np.ndarray,
    intents: Sequence[str],
    *,
    global_threshold: float = DEFAULT_THRESHOLD,
    grid: Sequence[float] = DEFAULT_GRID,
    min_support: int = DEFAULT_MIN_SUPPORT,
) -> Thresholds:
    """Per-intent θ maximising that intent's F1 on held-out probabilities.

    Intents with fewer than ``min_support`` positive examples keep ``global_threshold``. Ties are
    broken toward the θ closest to the global one, so a flat F1 curve does not move the threshold.

    Args:
        proba: ``(n, C)`` out-of-fold probabilities.
        targets: ``(n, C)`` binary gold labels.
        intents: the ``C`` intent names, in column order.
        global_threshold: the fall-back θ.
        grid: candidate θ values, each strictly inside (0, 1).
        min_support: fewest positive examples an intent needs to get its own θ.

    Example:
        >>> p = np.array([[0.2], [0.25], [0.1]]); y = np.array([[1], [1], [0]])
        >>> thresholds_from_probabilities(p, y, ["a"], grid=[0.15, 0.3], min_support=1).per_intent
        {'a': 0.15}
    """
    global_threshold = validate_threshold(global_threshold, "global threshold")
    grid = [validate_threshold(g, "grid threshold") for g in grid]
    if not grid:
        raise ValueError("the threshold grid is empty")
    proba = np.asarray(proba, dtype=np.float32)
    gold = np.asarray(targets) > 0.5
    if proba.shape != gold.shape or proba.ndim != 2 or proba.shape[1] != len(intents):
        raise ValueError(
            f"probabilities {proba.shape} and targets {gold.shape} must both be (n, {len(intents)})"
        )
    per_intent: dict[str, float] = {}
    for c, intent in enumerate(intents):
        support = int(gold[:, c].sum())
        if support < min_support:
            continue
        scored = [(_f1(proba[:, c] >= g, gold[:, c]), -abs(g - global_threshold), g) for g in grid]
        best = max(scored)
        per_intent[intent] = float(best[2])
    logger.debug("tuned %d of %d intent thresholds", len(per_intent), len(intents))
    return Thresholds(global_threshold, per_intent)


def decide(
    proba: np.ndarray, intents: Sequence[str], thresholds: ThresholdLike = None
) -> list[tuple[str, ...]]:
    """Turn ``(n, C)`` probabilities into label sets with ``p >= θ``.

    Example:
        >>> decide(np.array([[0.9, 0.2, 0.4]]), ["a", "b", "c"], 0.3)
        [('a', 'c')]
    """
    return above(proba, as_thresholds(thresholds).vector(intents), intents)
