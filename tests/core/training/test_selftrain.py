"""Pseudo-labels for self-training: class-balanced, most confident first, never more than asked."""

from __future__ import annotations

import numpy as np
import pytest

from core.retrieval.factory import vector_pool
from core.training.selftrain import pseudo_labels

POOL = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
LABELS = ["a", "b", "c"]


def test_each_intent_keeps_its_largest_margin_utterances_up_to_the_cap() -> None:
    unlabelled = np.array(
        [
            [0.9, 0.1, 0.0],  # a, margin 0.8
            [0.6, 0.55, 0.0],  # a, margin ~0.05: the least sure
            [0.95, 0.0, 0.0],  # a, margin ~1.0: the surest
            [0.1, 0.9, 0.0],  # b
            [0.3, 0.7, 0.0],  # b, less sure
        ]
    )
    assert pseudo_labels(vector_pool(POOL, LABELS), unlabelled, per_intent=2) == [
        (0, "a"),
        (2, "a"),
        (3, "b"),
        (4, "b"),
    ]
    assert pseudo_labels(vector_pool(POOL, LABELS), unlabelled, per_intent=1) == [
        (2, "a"),
        (3, "b"),
    ]


def test_a_frequent_intent_cannot_crowd_out_the_others() -> None:
    rng = np.random.default_rng(0)
    many_a = np.array([1.0, 0.05, 0.0]) + rng.normal(0, 0.01, (50, 3))
    one_c = np.array([[0.0, 0.1, 1.0]])
    chosen = pseudo_labels(vector_pool(POOL, LABELS), np.vstack([many_a, one_c]), per_intent=5)
    intents = [intent for _, intent in chosen]
    assert intents.count("a") == 5
    assert intents.count("c") == 1
    assert (50, "c") in chosen


def test_nothing_to_learn_from_gives_no_pseudo_labels() -> None:
    assert pseudo_labels(vector_pool(POOL, LABELS), np.zeros((0, 3)), per_intent=5) == []
    assert pseudo_labels(vector_pool(POOL, LABELS), np.eye(3), per_intent=0) == []
    assert (
        pseudo_labels(vector_pool(POOL[:1], ["a"]), np.eye(3), per_intent=5) == []
    )  # one intent: no margin


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="per_intent must be 0 or more"):
        pseudo_labels(vector_pool(POOL, LABELS), np.eye(3), per_intent=-1)
    with pytest.raises(ValueError, match="differ in length"):
        vector_pool(POOL, LABELS[:2])
