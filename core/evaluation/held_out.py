"""The held-out calibration of a retrained encoder: how much higher it scores the examples it
trained on than a new question of theirs, measured once at the retrain and kept as a
:class:`~core.evaluation.calibration.ScoreMap` that the out-of-scope calibration applies every
time it runs (:func:`core.evaluation.oos.calibrate_predictor`'s ``correction``).

Why: a retrain pulls the pool's own examples together, so even their out-of-fold scores (the
fold leaves the pool, not the encoder's training) run above a new question's, and the thresholds
chosen from them flagged 10-14 % of in-scope questions on BANKING77 and CLINC150 against a 5 %
goal. Scoring each example with an encoder trained without it met the goal on BANKING77 on 3
seeds of 3 (4.0-4.8 % flagged, out-of-scope recall 97.9-98.1 %, precision 95.3-96.1 %) and took
CLINC150 to 4.8 % (``bench/oos_calibration.py``, ``held-out 5``).

The steps (the caller trains; this module plans and scores, numpy and the pool's rule only):

1. :func:`held_out_plan`: the pool examples the encoder trained on, single-label, whose intent
   has at least 2 of them, dealt into :data:`HELD_OUT_FOLDS` folds by id (the one fold splitter,
   as the out-of-fold scores deal them).
2. For each fold, the caller trains the version's own recipe on its training rows less the
   fold's, and hands back a Predictor over the rest of the pool in that encoder's space (the
   same anchors, ``k`` and rule) and the fold's vectors in it (``fold_space``).
3. :func:`held_out_correction`: each held-out example's top score (:func:`held_out_scores`), and
   the map from the pool's own out-of-fold scores of the trained examples, under the version's
   encoder, onto them (:func:`fit_correction`). Applied to those examples' scores it gives the
   held-out ones back, so the threshold is the held-out threshold for any target recall, and the
   map goes on applying to them as the pool grows; examples labelled later score as they are
   (the version never saw them either).

Example:
    >>> from core.retrieval.factory import vector_pool
    >>> pool = vector_pool(np.eye(4)[[0, 0, 1, 1, 2, 2, 3, 3]], list("aabbccdd"))
    >>> [(f.index, f.held) for f in held_out_plan(pool, range(8), folds=2)]
    [(0, (0, 2, 4, 7)), (1, (1, 3, 5, 6))]
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import numpy as np

from core.evaluation.calibration import ScoreMap
from core.evaluation.oos import CALIBRATION_FOLDS, scored_out_of_fold
from core.folds import fold_assignments
from core.retrieval.predictor import Predictor

__all__ = [
    "HELD_OUT_FOLDS",
    "MIN_HELD_OUT",
    "HeldOut",
    "HeldOutFold",
    "fit_correction",
    "held_out_correction",
    "held_out_plan",
    "held_out_scores",
]

HELD_OUT_FOLDS = 5
# Fewer held-out scores than this make no map: a handful of quantiles would move the threshold
# more than the bias it corrects.
MIN_HELD_OUT = 20


@dataclass(frozen=True)
class HeldOutFold:
    """One held-out training: the pool ids it leaves out of training and then scores
    (``held``), and the pool ids they are scored against (``rest``: every other example)."""

    index: int
    held: tuple[int, ...]
    rest: tuple[int, ...]


@dataclass(frozen=True)
class HeldOut:
    """A held-out calibration's result: the map, the held-out scores behind it, the examples
    held out and the folds trained."""

    map: ScoreMap
    scores: int
    held: int
    folds: int


def held_out_plan(
    pool: Predictor, trained: Collection[int], folds: int = HELD_OUT_FOLDS, seed: int = 0
) -> list[HeldOutFold]:
    """The folds of the pool's examples that ``trained`` names (pool ids): single-label ones
    whose intent has at least 2 of them (held out, an intent's only example has no intent of its
    own to land on: it stays in training), stratified by intent and dealt by id; empty when
    there are fewer such examples than ``folds``."""
    ids, _, sets, _ = pool.index.examples()
    taken = set(trained)
    single = [
        (ids[i], sets[i][0]) for i in range(len(ids)) if len(sets[i]) == 1 and ids[i] in taken
    ]
    count = Counter(name for _, name in single)
    held = sorted((i, name) for i, name in single if count[name] >= 2)
    if len(held) < max(2, folds):
        return []
    assign = fold_assignments([name for _, name in held], folds, seed=seed)
    every = sorted(ids)
    plan = []
    for f in range(folds):
        mine = tuple(i for (i, _), a in zip(held, assign.tolist(), strict=True) if a == f)
        if mine:
            out = set(mine)
            plan.append(HeldOutFold(f, mine, tuple(i for i in every if i not in out)))
    return plan


def held_out_scores(fold_pool: Predictor, held_vectors: np.ndarray) -> list[float]:
    """The top score of each held-out example (its vector by the encoder trained without it)
    in ``fold_pool`` (the rest of the pool in that space), as a new question's: every top
    counts, its own intent or not; a top scored by its anchor alone (cold) has no threshold."""
    if not len(held_vectors):
        return []
    found = fold_pool.tops(np.asarray(held_vectors))
    return [
        float(score)
        for top, score, cold in zip(found.intents, found.scores, found.cold, strict=True)
        if top is not None and not cold
    ]


def fit_correction(
    pool: Predictor,
    trained: Collection[int],
    held_scores: Sequence[float],
    *,
    folds: int = CALIBRATION_FOLDS,
    seed: int = 0,
) -> ScoreMap:
    """The map from the out-of-fold scores the serving ``pool`` gives the examples its encoder
    trained on (those a calibration corrects: single-label, a top intent that is not cold, an
    intent with 2 examples or more) onto ``held_scores``."""
    rows = scored_out_of_fold(pool, folds=folds, seed=seed)
    taken = set(trained)
    count = Counter(name for _, name, _, _, _ in rows)
    own = [
        score
        for i, name, top, score, _ in rows
        if top is not None and i in taken and count[name] >= 2
    ]
    if not own:
        raise ValueError("No out-of-fold scores of trained examples to map.")
    return ScoreMap.fit(own, held_scores)


def held_out_correction(
    pool: Predictor,
    trained: Collection[int],
    plan: Sequence[HeldOutFold],
    fold_space: Callable[[HeldOutFold], tuple[Predictor, np.ndarray]],
) -> HeldOut | None:
    """The held-out calibration of the serving ``pool`` (see the module): ``fold_space(fold)``
    gives a fold's Predictor over ``fold.rest`` and the vectors of ``fold.held``, both by the
    encoder trained without them. None with fewer than :data:`MIN_HELD_OUT` held-out scores."""
    scores: list[float] = []
    for fold in plan:
        fold_pool, vectors = fold_space(fold)
        scores += held_out_scores(fold_pool, vectors)
    if len(scores) < MIN_HELD_OUT:
        return None
    return HeldOut(
        fit_correction(pool, trained, scores),
        len(scores),
        sum(len(f.held) for f in plan),
        len(plan),
    )
