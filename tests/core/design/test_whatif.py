"""Merge and split what-ifs: an estimate from out-of-fold predictions on the same folds, with no
retraining. Merging two intents the model confuses removes exactly those confusions; splitting an
intent made of two clear groups finds them and costs little."""

from __future__ import annotations

import numpy as np
import pytest

from core.design.whatif import merge_whatif, propose_parts, split_whatif
from core.evaluation import cross_validate_knn
from core.retrieval.factory import PredictorFactory

pytestmark = pytest.mark.fast


def _blobs(centres: list[int], n: int, dim: int = 16, noise: float = 0.05, seed: int = 0):
    rng = np.random.default_rng(seed)
    eye = np.eye(dim, dtype=np.float32)
    return np.concatenate([eye[c] + rng.normal(0, noise, (n, dim)) for c in centres])


def test_merging_two_overlapping_intents_removes_their_confusions():
    # a and b share one region; c is apart
    vecs = _blobs([0, 0, 5], 20)
    labels = ["a"] * 20 + ["b"] * 20 + ["c"] * 20
    w = merge_whatif(vecs, labels, "a", "b")
    base = cross_validate_knn(PredictorFactory.for_vectors(vecs.shape[1]), vecs, labels)
    assert w.accuracy_before == pytest.approx(base["accuracy"])  # the usual estimate
    assert w.accuracy_before < 0.85 and w.accuracy_after == 1.0
    assert w.confused == round((1 - w.accuracy_before) * 60)  # every error was a <-> b
    assert w.after == ("a+b",) and w.confusions_after == []
    assert "Merging a and b" in w.summary() and "no retraining" in w.summary()


def test_merging_distinct_intents_changes_nothing_and_keeps_other_confusions():
    vecs = _blobs([0, 3, 3], 15)
    labels = ["a"] * 15 + ["b"] * 15 + ["c"] * 15
    w = merge_whatif(vecs, labels, "a", "b")
    # never confused with each other; b's confusions with c stay (the estimate itself may move:
    # the merged intent's prototype sits between a and b, so b's questions lean further to c)
    assert w.confused == 0
    assert {(g, p) for g, p, _ in w.confusions_after} <= {("a+b", "c"), ("c", "a+b")}
    assert w.confusions_after


def test_a_merge_estimate_covers_1k_labelled_utterances():
    """(Its time is measured by bench/clusters.py, not asserted here.)"""
    vecs = _blobs(list(range(50)), 20, dim=384, noise=0.08)  # 50 intents x 20 = 1,000
    labels = [f"intent_{i // 20}" for i in range(1000)]
    w = merge_whatif(vecs, labels, "intent_0", "intent_1")
    assert w.n == 1000 and w.accuracy_after >= w.accuracy_before


def test_merge_of_an_intent_with_itself_or_an_unknown_one_is_refused():
    vecs = _blobs([0, 1], 5)
    labels = ["a"] * 5 + ["b"] * 5
    with pytest.raises(ValueError, match=r"two different intents to merge \(both are 'a'\)"):
        merge_whatif(vecs, labels, "a", "a")
    with pytest.raises(ValueError, match=r"No labelled examples of intent 'zzz'"):
        merge_whatif(vecs, labels, "a", "zzz")


def test_a_split_finds_the_two_groups_an_intent_is_made_of():
    vecs = _blobs([0, 4, 8], 12)  # "a" is really two groups: 0..11 and 12..23
    labels = ["a"] * 24 + ["b"] * 12
    texts = ["lost card"] * 12 + ["open account"] * 12 + ["other"] * 12
    w = split_whatif(vecs, labels, texts, "a")
    assert [set(p.members) for p in w.parts] in (
        [set(range(12)), set(range(12, 24))],
        [set(range(12, 24)), set(range(12))],
    )
    assert w.after == ("a/1", "a/2") and w.confused == 0
    assert w.accuracy_after == pytest.approx(w.accuracy_before)  # the parts are separable
    assert {w.parts[0].keywords[0], w.parts[1].keywords[0]} in ({"card", "account"},) or {
        w.parts[0].keywords[0],
        w.parts[1].keywords[0],
    } == {"lost", "open"}


def test_splitting_one_tight_group_costs_accuracy():
    vecs = _blobs([0, 4], 20, noise=0.2)
    labels = ["a"] * 20 + ["b"] * 20
    w = split_whatif(vecs, labels, ["x"] * 40, "a", parts=2)
    assert w.accuracy_after < w.accuracy_before and w.confused > 0
    assert "Splitting a into 2 parts" in w.summary()


def test_a_split_needs_enough_examples():
    vecs = _blobs([0, 1], 5)
    labels = ["a"] * 5 + ["b"] * 5
    with pytest.raises(ValueError, match=r"'a' has 5 labelled examples; a split needs at least 6"):
        split_whatif(vecs, labels, ["x"] * 10, "a")
    with pytest.raises(ValueError, match=r"Cannot split 4 examples into 3 parts"):
        propose_parts(vecs[:4], ["x"] * 4, parts=3)
