"""The decision rule's arithmetic on arrays, with numpy alone: written once, called by the app and
carried by every bundle.

:mod:`core.retrieval.rule` (every intent's score, the one ranking), the
:class:`~core.retrieval.predictor.Predictor`'s decision (``labels``, ``oos``) and the multi-label
head's thresholds (:mod:`core.multilabel.thresholds`) compute with these functions; a bundle's
``predict.py`` (:mod:`core.bundle.standalone`) is generated with this file's source inside, so
a bundle decides with the very same lines without the app. Hence the rule of this module: it
imports nothing but the standard library and numpy.

Example:
    >>> combine(0.9, 0.7), combine(0.9, None), combine(1.0, 0.5)
    (0.8, 0.9, 1.0)
    >>> labels, threshold = decide([("refund", 0.41), ("cancel", 0.4)], thresholds={"default": 0.5})
    >>> labels, threshold
    ([], 0.5)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

import numpy as np

# A question at least this similar to a labelled example is that example (its intent decides).
EXACT = 0.9999
# Top two intents closer than this are a close call (``ambiguous``), as Rasa flags them.
AMBIGUOUS_MARGIN = 0.05
# The multi-label decision without a head when no threshold was calibrated: an intent whose score
# reaches this is taken (the live pool calibrates one: core.retrieval.knn_threshold).
MULTI_LABEL_KNN_THRESHOLD = 0.5
# Neighbours a ranking looks at (an intent with no example among them is unranked).
DEPTH = 200
# The decision rules: the nearest example(s) alone (ConvFiT), or with the intent's prototype.
NEAREST = "nearest"
NEAREST_PROTOTYPE = "nearest+prototype"

Score = TypeVar("Score", float, np.ndarray)


def normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows as float32 unit vectors (a 1-D vector as one row; a zero row stays zero)."""
    v = np.ascontiguousarray(vectors, dtype=np.float32)
    if v.ndim == 1:
        v = v[None, :]
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.maximum(norms, 1e-12)


def combine(nearest: Score, prototype: Score | None) -> Score:
    """An intent's score from its nearest-example and prototype cosines: the mean of the two; the
    nearest alone when there is no prototype, or when the question *is* a labelled example
    (similarity of at least :data:`EXACT`: a labelled utterance gets its own intent back)."""
    if prototype is None:
        return nearest
    mixed = 0.5 * (nearest + prototype)
    if isinstance(nearest, np.ndarray):
        return np.where(nearest >= EXACT, nearest, mixed)
    return nearest if nearest >= EXACT else mixed


def search_width(depth: int, show: int, k: int) -> int:
    """How many neighbours a ranking asks the pool for: ``depth``, at least the ``show``
    neighbours shown and the ``k`` per intent, and one more (a question's own row left out)."""
    return max(depth, show, k) + 1


def anchored(
    total: np.ndarray | None, anchor: np.ndarray | None, weight: float
) -> np.ndarray | None:
    """An intent's prototype sum (its examples' unit vectors, float64) with its anchor's unit
    vector counted ``weight`` times (None: neither)."""
    if anchor is None or not weight:
        return total
    weighted = weight * anchor
    return weighted if total is None else total + weighted


def nearest_of_hits(
    sims: np.ndarray,
    ids: np.ndarray,
    columns: Callable[[list[int]], Sequence[Sequence[int]]],
    n_intents: int,
    k: int,
) -> np.ndarray:
    """Per query and intent, the mean of its ``k`` nearest among the hits, nearest first
    (``-inf``: none among them). ``sims``/``ids``: each query's hits, most similar first (an id
    below 0: none); ``columns(ids)``: the intent columns each distinct id votes for (every
    intent of a multi-label example)."""
    out = np.full((len(sims), n_intents), -np.inf)
    rows, cols = np.nonzero(ids >= 0)  # row by row, nearest first
    if not len(rows):
        return out
    hit_ids, hit_sims = ids[rows, cols], sims[rows, cols].astype(np.float64)
    uniq, inv = np.unique(hit_ids, return_inverse=True)
    sets = columns(uniq.tolist())
    table = np.full((len(uniq), max(len(s) for s in sets)), -1, dtype=np.int64)
    for row, voted_for in enumerate(sets):
        table[row, : len(voted_for)] = voted_for
    voted = table[inv.reshape(-1)]
    hr, hc = np.nonzero(voted >= 0)  # still nearest first within each query
    r, c, s = rows[hr], voted[hr, hc], hit_sims[hr]
    # each vote's place among its intent's votes for the query (0: the nearest)
    key = r * n_intents + c
    by_key = np.argsort(key, kind="stable")
    sorted_key = key[by_key]
    starts = np.flatnonzero(np.r_[True, sorted_key[1:] != sorted_key[:-1]])
    place = np.empty(len(key), dtype=np.int64)
    place[by_key] = np.arange(len(key)) - np.repeat(starts, np.diff(np.r_[starts, len(key)]))
    total, count = np.zeros_like(out), np.zeros_like(out)
    for p in range(k):  # summed nearest first
        pick = place == p
        total[r[pick], c[pick]] += s[pick]
        count[r[pick], c[pick]] += 1
    found = count > 0
    out[found] = total[found] / count[found]
    return out


def order(score: np.ndarray) -> np.ndarray:
    """Each row's columns best first (ties: the first column, i.e. the first intent by name):
    the one ranking of scores."""
    return np.argsort(-np.asarray(score, dtype=np.float64), axis=1, kind="stable")


def top_two(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row of a ``(questions, intents)`` score matrix (at least one intent): the top column,
    its score (0.0 with nothing ranked), the margin to the runner-up (1.0 without one, 0.0 with
    nothing ranked) and whether anything was ranked."""
    n_q = len(matrix)
    best2 = order(matrix)[:, :2]
    rows = np.arange(n_q)
    top = matrix[rows, best2[:, 0]].astype(np.float64)
    second = matrix[rows, best2[:, 1]] if matrix.shape[1] > 1 else np.full(n_q, -np.inf)
    found = np.isfinite(top)
    with np.errstate(invalid="ignore"):  # -inf - -inf: a row with nothing ranked
        margins = np.where(np.isfinite(second), top - second, 1.0)
    return best2[:, 0], np.where(found, top, 0.0), np.where(found, margins, 0.0), found


def decision_threshold(
    thresholds: Mapping[str, float], intent: str, *, multi_label: bool = False
) -> float:
    """The score ``intent`` needs to be decided: its own threshold, else ``"default"``, else
    none (single-label) or :data:`MULTI_LABEL_KNN_THRESHOLD` (multi-label)."""
    value = thresholds.get(intent, thresholds.get("default"))
    if value is None:
        return MULTI_LABEL_KNN_THRESHOLD if multi_label else -math.inf
    return float(value)


def decide(
    ranked: Sequence[tuple[str, float]],
    *,
    cold: bool = False,
    thresholds: Mapping[str, float] | None = None,
    multi_label: bool = False,
) -> tuple[list[str], float | None]:
    """The decision of the k-NN rule (no head) from the ranked intents (best first, with their
    scores): the label set and the threshold that decided a single-label question (None: none
    did). Single-label: the top intent when its score reaches its threshold (none by default;
    a top intent scored by its anchor alone, ``cold``, is taken: thresholds are calibrated on
    example scores); multi-label: every intent whose score reaches its threshold."""
    thresholds = thresholds or {}
    if multi_label:
        return [
            name
            for name, value in ranked
            if value >= decision_threshold(thresholds, name, multi_label=True)
        ], None
    if not ranked:
        return [], None
    top, value = ranked[0]
    if cold:
        return [top], None
    needed = decision_threshold(thresholds, top)
    return ([top] if value >= needed else []), (needed if math.isfinite(needed) else None)


def above(proba: np.ndarray, theta: np.ndarray, intents: Sequence[str]) -> list[tuple[str, ...]]:
    """The multi-label head's decision: per row of ``(n, C)`` probabilities, the intents (sorted)
    whose probability reaches its threshold (``theta``: one per column)."""
    hits = np.asarray(proba) >= np.asarray(theta, dtype=np.float64)[None, :]
    return [tuple(sorted(intents[int(j)] for j in np.flatnonzero(row))) for row in hits]
