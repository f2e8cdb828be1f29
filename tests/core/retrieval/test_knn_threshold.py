"""The multi-label decision without a head: its threshold is calibrated out of fold over the
labelled pool (the best micro-F1 or exact match of the out-of-fold label sets), not a fixed 0.5."""

from __future__ import annotations

import numpy as np
import pytest

from core.multilabel.metrics import multilabel_scores
from core.retrieval.factory import vector_pool
from core.retrieval.knn_threshold import (
    calibrate_knn_threshold,
    choose_knn_threshold,
    out_of_fold_label_scores,
)

pytestmark = pytest.mark.fast


def _scored(seed: int = 0):
    rng = np.random.default_rng(seed)
    names = list("abcde")
    out = []
    for _ in range(80):
        gold = tuple(sorted(rng.choice(names, rng.integers(0, 3), replace=False)))
        scores = {n: round(float(rng.uniform(0, 1)), 2) for n in names if rng.uniform() < 0.8}
        for n in gold:
            if n in scores:
                scores[n] = min(1.0, scores[n] + 0.3)
        out.append((gold, scores))
    return out


@pytest.mark.parametrize("criterion", ["micro_f1", "exact_match"])
def test_the_chosen_threshold_is_the_best_of_every_candidate(criterion):
    scored = _scored()
    gold = [g for g, _ in scored]

    def quality(t: float) -> float:
        pred = [tuple(n for n, v in s.items() if v >= t) for _, s in scored]
        return multilabel_scores(gold, pred)[criterion]

    chosen = choose_knn_threshold(scored, criterion)
    candidates = sorted({v for _, s in scored for v in s.values()})
    assert quality(chosen) == pytest.approx(max(quality(t) for t in candidates))


def test_a_pool_whose_intents_sit_apart_gets_a_threshold_above_the_fixed_half():
    """Three intents in one region of the space (as in-domain sentences of one frozen encoder
    are): every intent scores above 0.5 for every question, so a fixed 0.5 takes them all; the
    calibrated threshold takes each question's own intents."""
    rng = np.random.default_rng(0)
    common = rng.normal(0, 1, 16)
    centres = [common + 0.8 * rng.normal(0, 1, 16) for _ in range(3)]
    vectors, sets = [], []
    for j, c in enumerate(centres):
        for _ in range(8):
            vectors.append(c + 0.2 * rng.normal(0, 1, 16))
            sets.append((f"i{j}",))
    for _ in range(8):  # rows with two intents, between their centres
        vectors.append(centres[0] + centres[1] + 0.2 * rng.normal(0, 1, 16))
        sets.append(("i0", "i1"))
    pool = vector_pool(np.array(vectors), sets, multi_label=True)
    threshold = calibrate_knn_threshold(pool)
    assert threshold is not None and threshold > 0.5
    scored = out_of_fold_label_scores(pool)
    assert len(scored) == len(sets)  # every pool row scored once, by the other folds
    fixed = [tuple(n for n, v in s.items() if v >= 0.5) for _, s in scored]
    tuned = [tuple(n for n, v in s.items() if v >= threshold) for _, s in scored]
    gold = [g for g, _ in scored]
    assert multilabel_scores(gold, tuned)["micro_f1"] > multilabel_scores(gold, fixed)["micro_f1"]


def test_unknown_criteria_and_empty_pools_are_refused_or_skipped():
    with pytest.raises(ValueError, match="Unknown criterion"):
        choose_knn_threshold(_scored(), "accuracy")
    assert calibrate_knn_threshold(vector_pool(np.eye(2)[:1], [("a",)])) is None
