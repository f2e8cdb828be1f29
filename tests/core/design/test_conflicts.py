"""Conflicts from vectors and labels: planted near-duplicates with another intent, flipped labels
and two intents drawn on top of each other are found, and clean data raises nothing."""

from __future__ import annotations

import numpy as np
import pytest

from core.design import (
    IntentOverlap,
    LabelIssue,
    NearDuplicate,
    find_conflicts,
    near_duplicates,
    out_of_fold,
)

pytestmark = pytest.mark.fast

INTENTS = [f"intent_{i}" for i in range(8)]


def clusters(per_intent: int = 12, dim: int = 48, seed: int = 0, spread: float = 0.35):
    """Well separated intents: each row is its intent's centre plus noise."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(len(INTENTS), dim))
    vectors, labels = [], []
    for name, centre in zip(INTENTS, centres, strict=True):
        for _ in range(per_intent):
            vectors.append(centre + spread * rng.normal(size=dim) * np.linalg.norm(centre) / 7)
            labels.append(name)
    return np.asarray(vectors, dtype=np.float32), labels, centres


def test_clean_well_separated_intents_have_no_mislabels_or_duplicates():
    vectors, labels, _ = clusters()
    report = find_conflicts(vectors, labels)
    assert report.label_issues == ()
    assert report.duplicates == ()
    assert report.oof.predicted == labels


def test_flipped_labels_are_found_with_the_intent_they_belong_to():
    vectors, labels, _ = clusters()
    noisy = list(labels)
    flips = {3: "intent_5", 30: "intent_0", 77: "intent_2"}
    for row, wrong in flips.items():
        noisy[row] = wrong
    report = find_conflicts(vectors, noisy)
    found = {x.row: x for x in report.label_issues}
    assert set(found) == set(flips)
    for row, issue in found.items():
        assert isinstance(issue, LabelIssue)
        assert issue.given == flips[row] and issue.suggested == labels[row]
        assert issue.given_probability < 0.01 < issue.suggested_probability
    # most severe first, and a flip is not taken for an overlap of its two intents
    assert [x.severity for x in report.label_issues] == sorted(
        (x.severity for x in report.label_issues), reverse=True
    )
    assert report.overlaps == ()


def test_a_near_duplicate_with_another_intent_is_found_and_the_odd_one_is_to_change():
    vectors, labels, _ = clusters()
    rng = np.random.default_rng(1)
    twin = vectors[5] + 0.01 * rng.normal(size=vectors.shape[1]).astype(np.float32)
    vectors = np.vstack([vectors, twin])
    labels = [*labels, "intent_6"]  # says what row 5 (intent_0) says, labelled otherwise
    report = find_conflicts(vectors, labels)
    assert [(d.keep, d.change) for d in report.duplicates] == [(5, len(labels) - 1)]
    assert isinstance(report.duplicates[0], NearDuplicate)
    assert report.duplicates[0].similarity > 0.99


def test_near_duplicates_with_the_same_intents_are_not_conflicts():
    v = np.array([[1, 0], [1, 0.01], [0, 1]], dtype=np.float32)
    assert near_duplicates(v, [("a", "b"), ("b", "a"), ("c",)]) == []
    assert [(d.keep, d.change) for d in near_duplicates(v, ["a", "b", "c"])] == [(0, 1)]


def test_two_intents_drawn_together_are_the_top_overlap_with_their_confusable_examples():
    vectors, labels, centres = clusters(seed=2)
    # intent_1's rows move most of the way to intent_4: the two now overlap
    rows = [i for i, name in enumerate(labels) if name == "intent_1"]
    vectors[rows] = 0.2 * vectors[rows] + 0.8 * centres[4].astype(np.float32)
    report = find_conflicts(vectors, labels)
    top = report.overlaps[0]
    assert isinstance(top, IntentOverlap)
    assert {top.a, top.b} == {"intent_1", "intent_4"}
    assert top.a_as_b + top.b_as_a > 0 and top.centroid_similarity > 0.85
    assert top.examples and all({e.source, e.toward} == {top.a, top.b} for e in top.examples)
    assert all(labels[e.row] == e.source for e in top.examples)
    assert all(e.margin > 0 and e.source == top.a for e in top.moves())
    assert report.ranked()[0] is top or report.ranked()[0].severity >= top.severity


def test_out_of_fold_never_scores_a_row_against_itself():
    # two intents, a row's only twin is in its own fold: without it, it reads as the other
    v = np.array([[1, 0], [1, 0], [0, 1], [0, 1]], dtype=np.float32)
    oof = out_of_fold(v, ["a", "a", "b", "b"], folds=2)
    assert oof.folds.tolist() in ([0, 1, 0, 1], [1, 0, 1, 0])
    assert np.allclose(oof.scores[:, oof.column("a")], [1, 1, 0, 0])
    assert np.allclose(oof.probabilities.sum(axis=1), 1)


def test_a_row_without_an_intent_is_refused():
    with pytest.raises(ValueError, match="Every row needs at least one intent"):
        out_of_fold(np.eye(3, dtype=np.float32), [("a",), (), ("b",)], folds=2)


def test_out_of_fold_scores_are_the_fold_pools_predictions_with_the_projects_k_and_anchors():
    """Each row's out-of-fold scores are what a Predictor of the project's factory, built on the
    other folds, ranks for it: the rule, k and anchors the live pool uses."""
    from core.retrieval.factory import Anchors, PredictorFactory

    vectors, labels, centres = clusters(per_intent=6, spread=0.9)
    anchors = Anchors({n: n for n in INTENTS}, 2.0, centres.astype(np.float32))
    factory = PredictorFactory.for_vectors(vectors.shape[1], k=2, anchors=anchors)
    oof = out_of_fold(vectors, labels, factory=factory, folds=3)
    plain = out_of_fold(vectors, labels, folds=3)
    assert not np.allclose(oof.scores, plain.scores)  # the anchors and k count
    for f in range(3):
        held = np.flatnonzero(oof.folds == f)
        rest = np.flatnonzero(oof.folds != f)
        pool = factory.build([""] * len(rest), [labels[i] for i in rest], vectors=vectors[rest])
        for row, pred in zip(held, pool.rank(vectors[held], depth=500), strict=True):
            assert oof.predicted[row] == pred.top
            for s in pred.intents:
                assert oof.scores[row, oof.column(s.intent)] == pytest.approx(s.score, abs=1e-5)
