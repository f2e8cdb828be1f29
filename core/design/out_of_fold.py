"""Out-of-fold intent scores: every labelled row scored against the rows of the *other* folds,
by a Predictor of the project's :class:`~core.retrieval.factory.PredictorFactory` over those
folds (the live rule, ``k`` and anchors: :meth:`~core.retrieval.predictor.Predictor.score_matrix`;
a multi-intent example votes for each of its intents), with the one fold splitter
(:func:`core.folds.fold_assignments`).

A row is never scored against itself nor against the rows of its own fold, so the scores say how
the rest of the data sees it: the input cleanlab's confident learning asks for, and the confusion
that shows overlapping intents.

Example:
    >>> v = np.array([[1, 0], [0.98, 0.2], [0, 1], [0.2, 0.98]], dtype=np.float32)
    >>> oof = out_of_fold(v, [("a",), ("a",), ("b",), ("b",)], folds=2)
    >>> oof.intents, oof.predicted
    (('a', 'b'), ['a', 'a', 'b', 'b'])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core.folds import fold_assignments
from core.retrieval.factory import PredictorFactory
from core.retrieval.knn import normalise
from core.retrieval.rule import rank

UNSCORED = -1.0  # an intent with no example outside the row's fold
CHUNK = 1024  # held-out rows compared at a time (bounds memory for large pools)
# Softmax temperatures tried when calibrating (cosine scores 0.05 apart at 0.05: a factor e).
TEMPERATURES = tuple(float(t) for t in np.geomspace(0.005, 0.5, 41))


@dataclass(frozen=True)
class OutOfFold:
    """Per row, each intent's out-of-fold score and the resulting probabilities.

    ``scores[i, j]`` is intent ``intents[j]``'s k-NN score for row ``i`` from the other folds
    (:data:`UNSCORED` when that intent has no example there); ``probabilities`` is their softmax
    at ``temperature``; ``predicted[i]`` is the best-scoring intent.
    """

    intents: tuple[str, ...]
    scores: np.ndarray
    probabilities: np.ndarray
    folds: np.ndarray
    temperature: float

    @property
    def predicted(self) -> list[str]:
        return [str(name) for name in rank((self.intents, self.scores)).intents]

    def column(self, intent: str) -> int:
        return self.intents.index(intent)


def _label_sets(labels: Sequence[str] | Sequence[Sequence[str]]) -> list[tuple[str, ...]]:
    return [(x,) if isinstance(x, str) else tuple(sorted(x)) for x in labels]


def softmax(scores: np.ndarray, temperature: float) -> np.ndarray:
    """Row-wise softmax of ``scores / temperature`` (unscored intents get ~0).

    Example:
        >>> softmax(np.array([[0.5, 0.5]]), 0.05).tolist()
        [[0.5, 0.5]]
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}.")
    z = np.asarray(scores, dtype=np.float64) / temperature
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def calibrate_temperature(scores: np.ndarray, member: np.ndarray) -> float:
    """The temperature (from :data:`TEMPERATURES`) whose softmax gives the rows' own intents the
    highest likelihood: temperature scaling, so that a probability of 1 % means about that.

    Args:
        scores: ``(n, K)`` out-of-fold scores.
        member: ``(n, K)`` booleans, True where the intent is one of the row's own.
    """
    best, best_nll = TEMPERATURES[0], np.inf
    for t in TEMPERATURES:
        own = (softmax(scores, t) * member).sum(axis=1)
        nll = float(-np.log(np.maximum(own, 1e-12)).mean())
        if nll < best_nll:
            best, best_nll = t, nll
    return best


def out_of_fold(
    vectors: np.ndarray,
    labels: Sequence[str] | Sequence[Sequence[str]],
    *,
    factory: PredictorFactory | None = None,
    folds: int = 5,
    seed: int = 0,
    temperature: float | None = None,
) -> OutOfFold:
    """Score every row against the other folds.

    Args:
        vectors: ``(n, d)`` vectors of the labelled rows.
        labels: each row's intent, or label set (every row needs at least one intent).
        factory: makes the fold-wise pools (the project's rule, ``k`` and anchors; None: the
            default rule, ``k`` 1, no anchors).
        folds: how many folds (rows of one fold are never compared with each other).
        seed: the fold shuffle.
        temperature: of the softmax that turns scores into probabilities (None: calibrated on
            the rows' own intents by :func:`calibrate_temperature`).

    Raises:
        ValueError: a row without an intent, mismatched lengths, or fewer rows than folds.
    """
    sets = _label_sets(labels)
    if len(sets) != len(vectors):
        raise ValueError("vectors and labels differ in length.")
    if any(not s for s in sets):
        raise ValueError("Every row needs at least one intent to be scored out of fold.")
    data = normalise(np.asarray(vectors, dtype=np.float32))
    if factory is None:
        factory = PredictorFactory.for_vectors(data.shape[1])
    intents = tuple(sorted({name for s in sets for name in s}))
    col = {name: j for j, name in enumerate(intents)}
    member = np.zeros((len(sets), len(intents)), dtype=bool)
    for i, s in enumerate(sets):
        member[i, [col[name] for name in s]] = True
    assign = fold_assignments(sets, folds, seed=seed)
    scores = np.full((len(sets), len(intents)), UNSCORED, dtype=np.float32)
    for f in range(folds):
        held = np.flatnonzero(assign == f)
        rest = np.flatnonzero(assign != f)
        if len(held) == 0 or len(rest) == 0:
            continue
        pool = factory.build([""] * len(rest), [sets[i] for i in rest], vectors=data[rest])
        for start in range(0, len(held), CHUNK):
            rows = held[start : start + CHUNK]
            names, m = pool.score_matrix(data[rows])
            # an anchored intent no labelled row carries is not a column
            for jj, name in enumerate(names):
                if name in col:
                    scores[rows, col[name]] = m[:, jj]
    t = calibrate_temperature(scores, member) if temperature is None else temperature
    return OutOfFold(intents, scores, softmax(scores, t), assign, t)
