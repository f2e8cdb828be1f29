"""What the out-of-scope calibration (:func:`core.evaluation.oos.calibrate_predictor`) makes and
takes: :class:`Calibration` (the thresholds and how they were made), and the :class:`Correction`
a held-out calibration (:mod:`core.evaluation.held_out`) measured of a retrained encoder, a
:class:`ScoreMap`: a monotone map between two distributions of scores, quantile to quantile.

A retrained encoder pulls the examples it trained on together, so their out-of-fold scores in its
own pool run above the scores a new question of theirs gets. The held-out calibration scores the
same examples with encoders that never saw them; :meth:`ScoreMap.fit` maps each quantile of the
first distribution (``source``) onto the same quantile of the second (``target``). Applied to the
first scores it gives back the second ones, so the threshold chosen from the mapped scores is the
held-out threshold, for any target recall; between knots it interpolates, and beyond the ends it
shifts by the end's offset. With as many knots as scores (up to :data:`MAX_KNOTS`) the map is exact
on the scores it was fitted on.

Example:
    >>> m = ScoreMap.fit([0.9, 0.8, 0.7], [0.8, 0.6, 0.5])
    >>> m(np.array([0.7, 0.8, 0.9])).round(3).tolist(), m(np.array([0.75, 0.6])).round(3).tolist()
    ([0.5, 0.6, 0.8], [0.55, 0.4])
    >>> ScoreMap.from_dict(m.to_dict()) == m
    True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["MAX_KNOTS", "Calibration", "Correction", "ScoreMap"]

# Knots kept (the map is exact on up to this many scores; a bigger pool keeps its quantiles)
MAX_KNOTS = 2000
DECIMALS = 9  # what a knot is stored with (float32 cosines: below their precision)


@dataclass(frozen=True)
class ScoreMap:
    """Knots ``source[i] -> target[i]``, both non-decreasing (see the module)."""

    source: tuple[float, ...]
    target: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.source) != len(self.target) or not self.source:
            raise ValueError("A score map needs as many source as target knots, at least one.")
        if np.any(np.diff(self.source) < 0) or np.any(np.diff(self.target) < 0):
            raise ValueError("A score map's knots must be sorted.")

    @classmethod
    def fit(
        cls, source: Sequence[float], target: Sequence[float], knots: int = MAX_KNOTS
    ) -> ScoreMap:
        """The map of ``source``'s quantiles onto ``target``'s (both any order and length), at
        ``min(len(source), len(target), knots)`` evenly spaced quantiles."""
        if not len(source) or not len(target):
            raise ValueError("A score map needs scores on both sides.")
        n = max(1, min(len(source), len(target), knots))
        at = np.linspace(0.0, 1.0, n) if n > 1 else np.array([0.5])
        xs = np.round(np.quantile(np.asarray(source, dtype=np.float64), at), DECIMALS)
        ys = np.round(np.quantile(np.asarray(target, dtype=np.float64), at), DECIMALS)
        return cls(tuple(float(x) for x in xs), tuple(float(y) for y in ys))

    def __call__(self, scores: np.ndarray | Sequence[float]) -> np.ndarray:
        """The mapped scores (ties among the source knots map to their first target)."""
        x = np.asarray(scores, dtype=np.float64)
        xs, ys = np.asarray(self.source), np.asarray(self.target)
        # np.interp wants increasing knots: a run of equal source knots keeps its first target
        first = np.r_[True, np.diff(xs) > 0]
        xs, ys = xs[first], ys[first]
        out = np.interp(x, xs, ys)
        below, above = x < xs[0], x > xs[-1]
        out[below] = x[below] + (ys[0] - xs[0])
        out[above] = x[above] + (ys[-1] - xs[-1])
        return out

    def shift_at(self, score: float) -> float:
        """How much the map moves ``score`` (negative: lowers it).

        >>> ScoreMap((0.5, 0.9), (0.4, 0.85)).shift_at(0.5)
        -0.1
        """
        return round(float(self(np.array([score]))[0]) - float(score), DECIMALS)

    def to_dict(self) -> dict[str, Any]:
        return {"source": list(self.source), "target": list(self.target)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScoreMap:
        """The map of its ``to_dict()`` (raises ValueError on anything else)."""
        try:
            source = tuple(float(v) for v in data["source"])
            target = tuple(float(v) for v in data["target"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"Not a score map: {exc}") from None
        return cls(source, target)


@dataclass(frozen=True)
class Correction:
    """What :func:`core.evaluation.oos.calibrate_predictor` corrects: the out-of-fold scores of
    the pool examples ``ids`` (those the encoder trained on) are mapped by ``map`` before the
    threshold is chosen; ``source`` says where the map comes from, in words."""

    map: ScoreMap
    ids: frozenset[int]
    source: str = "a held-out calibration"

    def key(self) -> list[Any]:
        """What a stored calibration depends on (for a cache key)."""
        return [self.map.to_dict(), sorted(self.ids), self.source]


@dataclass(frozen=True)
class Calibration:
    """Thresholds (intent or ``"default"`` -> minimum score) and how they were made."""

    thresholds: dict[str, float]
    target_recall: float
    fallback: tuple[str, ...] = ()  # intents on the project-wide threshold (too few examples)
    n_scores: int = 0  # in-scope out-of-fold scores behind the project-wide threshold
    n_out_of_scope: int = 0  # examples labelled out of scope that were used
    notes: list[str] = field(default_factory=list)
    # (margin, threshold): a question whose top two intents are within ``margin`` is out of
    # scope below ``threshold`` (:meth:`looks_out_of_scope`); None: the thresholds alone
    uncertain: tuple[float, float] | None = None
    # a correction's words (where it came from), the scores it corrected and the project-wide
    # threshold without it
    corrected_by: str | None = None
    n_corrected: int = 0
    uncorrected: float | None = None

    @property
    def default(self) -> float | None:
        return self.thresholds.get("default")

    def looks_out_of_scope(self, out_of_scope: bool, score: float, margin: float) -> bool:
        """Whether to show a question as *looks out of scope* (the Label queue's hint): its
        prediction's ``out_of_scope`` (never more), except that an uncertain question (a small ``margin``:
        the ones the queue shows first) needs a score below the threshold calibrated on the
        uncertain training examples — uncertain in-scope questions score low, and the
        project-wide threshold would flag most of them.

        Example:
            >>> cal = Calibration({"default": 0.6}, 0.95, uncertain=(0.02, 0.45))
            >>> cal.looks_out_of_scope(True, 0.5, 0.01), cal.looks_out_of_scope(True, 0.5, 0.1)
            (False, True)
        """
        if self.uncertain is None or margin > self.uncertain[0]:
            return out_of_scope
        return out_of_scope and score < self.uncertain[1]

    def message(self) -> str:
        """One plain paragraph on what was calibrated.

        Example:
            >>> Calibration({}, 0.95, notes=["Nothing to calibrate."]).message()
            'Nothing to calibrate.'
        """
        return " ".join(self.notes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "thresholds": dict(self.thresholds),
            "target_recall": self.target_recall,
            "fallback": list(self.fallback),
            "n_scores": self.n_scores,
            "n_out_of_scope": self.n_out_of_scope,
            "notes": list(self.notes),
            "uncertain": list(self.uncertain) if self.uncertain is not None else None,
            "corrected_by": self.corrected_by,
            "n_corrected": self.n_corrected,
            "uncorrected": self.uncorrected,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Calibration:
        """The calibration of its ``to_dict()``.

        Example:
            >>> cal = Calibration({"default": 0.6}, 0.95, ("a",), 9, 0, ["n"], (0.02, 0.45))
            >>> Calibration.from_dict(cal.to_dict()) == cal
            True
        """
        uncertain = data.get("uncertain")
        uncorrected = data.get("uncorrected")
        return cls(
            thresholds={k: float(v) for k, v in dict(data["thresholds"]).items()},
            target_recall=float(data["target_recall"]),
            fallback=tuple(data.get("fallback") or ()),
            n_scores=int(data.get("n_scores") or 0),
            n_out_of_scope=int(data.get("n_out_of_scope") or 0),
            notes=list(data.get("notes") or []),
            uncertain=(float(uncertain[0]), float(uncertain[1])) if uncertain else None,
            corrected_by=data.get("corrected_by"),
            n_corrected=int(data.get("n_corrected") or 0),
            uncorrected=float(uncorrected) if uncorrected is not None else None,
        )
