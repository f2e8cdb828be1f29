"""The held-out calibration of a retrained encoder (issue 55): a pool whose encoder trained on its
own examples scores them higher than a new question of theirs; scored by encoders that never saw
them they score as new questions do, and the correction the calibration keeps (a quantile map)
gives that threshold back from the pool's own scores, for any target and as the pool grows.

The encoders are simulated by vectors: an intent's examples sit around its centre, tighter in
the space of an encoder that trained on them (what a retrain does), as loose as a new question
in the space of one that did not."""

from __future__ import annotations

import numpy as np
import pytest

from core.evaluation.calibration import Correction, ScoreMap
from core.evaluation.held_out import (
    MIN_HELD_OUT,
    HeldOutFold,
    held_out_correction,
    held_out_plan,
)
from core.evaluation.oos import (
    CALIBRATION_FOLDS,
    calibrate_predictor,
    choose_threshold,
    scored_out_of_fold,
)
from core.folds import fold_assignments
from core.retrieval.factory import PredictorFactory
from core.retrieval.predictor import Predictor

pytestmark = pytest.mark.fast

INTENTS, PER, DIM = 20, 15, 24
LOOSE, TIGHT = 0.9, 0.75  # a new question's spread around its intent; a trained example's


class World:
    """Intent centres, each pool example's own direction off its centre, and the spaces."""

    def __init__(self, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.rng = rng
        self.centres = rng.normal(0, 1, (INTENTS, DIM))
        self.labels = [f"i{j:02d}" for j in range(INTENTS) for _ in range(PER)]
        self.noise = rng.normal(0, 1, (len(self.labels), DIM))
        self.factory = PredictorFactory.for_vectors(DIM)

    def vectors(self, trained: set[int]) -> np.ndarray:
        """The pool in the space of an encoder that trained on the examples ``trained``."""
        spread = np.array([TIGHT if i in trained else LOOSE for i in range(len(self.labels))])
        base = self.centres[[int(name[1:]) for name in self.labels]]
        return (base + spread[:, None] * self.noise).astype(np.float32)

    def pool(self, trained: set[int], rows: list[int] | None = None) -> Predictor:
        rows = list(range(len(self.labels))) if rows is None else rows
        vectors = self.vectors(trained)
        return self.factory.build(
            [""] * len(rows), [self.labels[i] for i in rows], vectors=vectors[rows], ids=rows
        )

    def questions(self, n: int) -> np.ndarray:
        """New in-scope questions: as loose around their intent as any the encoder never saw."""
        which = self.rng.integers(0, INTENTS, n)
        return (self.centres[which] + LOOSE * self.rng.normal(0, 1, (n, DIM))).astype(np.float32)

    def fold_space(self, everyone: set[int]):
        """Each fold's encoder trained on every example of ``everyone`` but the fold's."""

        def space(fold: HeldOutFold) -> tuple[Predictor, np.ndarray]:
            vectors = self.vectors(everyone - set(fold.held))
            rest = list(fold.rest)
            pool = self.factory.build(
                [""] * len(rest), [self.labels[i] for i in rest], vectors=vectors[rest], ids=rest
            )
            return pool, vectors[list(fold.held)]

        return space


def _flagged(pool: Predictor, questions: np.ndarray, threshold: float) -> float:
    return float(np.mean(pool.tops(questions).scores < threshold))


def test_the_map_gives_back_the_scores_it_was_fitted_on_and_shifts_beyond_its_ends():
    rng = np.random.default_rng(1)
    source, target = rng.uniform(0.5, 0.9, 300), rng.uniform(0.3, 0.8, 300)
    m = ScoreMap.fit(source, target)
    assert np.allclose(np.sort(m(source)), np.sort(target), atol=1e-6)
    # monotone between its knots, a shift beyond them
    grid = np.linspace(0.4, 1.0, 50)
    assert np.all(np.diff(m(grid)) >= -1e-12)
    lo, hi = min(source), max(source)
    assert m([lo - 0.1])[0] == pytest.approx(m([lo])[0] - 0.1)
    assert m([hi + 0.05])[0] == pytest.approx(m([hi])[0] + 0.05)
    assert ScoreMap.from_dict(m.to_dict()) == m
    with pytest.raises(ValueError, match="Not a score map"):
        ScoreMap.from_dict({"source": [0.1]})
    with pytest.raises(ValueError, match="sorted"):
        ScoreMap((0.2, 0.1), (0.1, 0.2))


def test_the_held_out_folds_are_the_calibrations_folds_when_the_encoder_trained_on_the_pool():
    """At the retrain the correction is exact only if the held-out examples are the ones the
    calibration scores, fold by fold: the same splitter, by id."""
    world = World()
    everyone = set(range(len(world.labels)))
    pool = world.pool(everyone)
    plan = held_out_plan(pool, everyone)
    assign = fold_assignments(world.labels, CALIBRATION_FOLDS, seed=0)
    assert [set(f.held) for f in plan] == [
        set(np.flatnonzero(assign == f).tolist()) for f in range(CALIBRATION_FOLDS)
    ]
    assert all(set(f.rest) == everyone - set(f.held) for f in plan)
    # only the examples the encoder trained on are held out; an intent left with one is not
    some = set(range(0, len(world.labels), 2)) | {1}
    held = {i for f in held_out_plan(pool, some) for i in f.held}
    assert held == set(range(0, len(world.labels), 2)) | {1}
    assert held_out_plan(pool, {0, 1, 2}) == []  # fewer than the folds


def test_a_retrained_pool_calibrated_on_its_own_scores_flags_too_many_and_the_correction_does_not():
    """The retrain's bias, and what the held-out calibration does with it: the thresholds from
    the pool's own scores flag far more than the target's share of new in-scope questions; the
    corrected ones flag about that share, and they are exactly the threshold of the held-out
    scores, at every target."""
    world = World()
    everyone = set(range(len(world.labels)))
    pool = world.pool(everyone)
    result = held_out_correction(
        pool, everyone, held_out_plan(pool, everyone), world.fold_space(everyone)
    )
    assert result is not None and result.held == result.scores == len(everyone)
    correction = Correction(result.map, frozenset(everyone), "the test's held-out calibration")
    held_scores = []
    for fold in held_out_plan(pool, everyone):
        fold_pool, vectors = world.fold_space(everyone)(fold)
        held_scores += fold_pool.tops(vectors).scores.tolist()
    questions = world.questions(4000)
    for target in (0.95, 0.9, 0.8):
        quick = calibrate_predictor(pool, target_recall=target)
        held = calibrate_predictor(pool, target_recall=target, correction=correction)
        assert held.default == pytest.approx(choose_threshold(held_scores, (), target), abs=1e-5)
        assert held.uncorrected == pytest.approx(quick.default)
        assert held.n_corrected == len(everyone) and held.corrected_by in held.message()
        goal = 1 - target
        assert _flagged(pool, questions, quick.default) > goal + 0.1
        assert abs(_flagged(pool, questions, held.default) - goal) < 0.035


def test_the_correction_keeps_holding_as_the_pool_grows_with_examples_the_encoder_never_saw():
    """Labels added after the retrain are as new to its encoder as a question: their scores are
    taken as they are, the trained examples' are still corrected, and new questions are flagged
    at about the target's share; without the correction, at more."""
    world = World(seed=3)
    trained = set(range(0, len(world.labels), 2))  # the version trained on half; half came later
    result = held_out_correction(
        world.pool(trained, sorted(trained)),
        trained,
        held_out_plan(world.pool(trained, sorted(trained)), trained),
        world.fold_space(trained),
    )
    assert result is not None
    grown = world.pool(trained)  # every example, in the version's space
    correction = Correction(result.map, frozenset(trained), "v1's held-out calibration")
    cal = calibrate_predictor(grown, target_recall=0.95, correction=correction)
    quick = calibrate_predictor(grown, target_recall=0.95)
    assert cal.n_corrected == len(trained) and cal.n_scores == len(world.labels)
    # by hand: the trained examples' own scores mapped, the others as they are
    rows = scored_out_of_fold(grown)
    by_hand = [float(result.map([s])[0]) if i in trained else s for i, _, top, s, _ in rows if top]
    assert cal.default == pytest.approx(choose_threshold(by_hand, (), 0.95), abs=1e-9)
    questions = world.questions(4000)
    assert abs(_flagged(grown, questions, cal.default) - 0.05) < 0.03
    assert _flagged(grown, questions, quick.default) > _flagged(grown, questions, cal.default)


def test_too_few_held_out_scores_make_no_correction():
    world = World()
    few = set(range(MIN_HELD_OUT - 1))
    pool = world.pool(few, sorted(few))
    assert held_out_correction(pool, few, held_out_plan(pool, few), world.fold_space(few)) is None
