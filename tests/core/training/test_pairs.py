from __future__ import annotations

import pytest

from core.training.pairs import (
    anchor_positive_batches,
    check_trainable,
    focus_batches,
    positive_pairs,
)

pytestmark = pytest.mark.fast

LABELS = [(f"i{i // 3}",) for i in range(12)]  # 4 intents x 3 examples


def test_multi_label_pairs_use_label_set_intersection() -> None:
    labels = [("x", "y"), ("y",), ("z",), ("x", "z")]
    assert positive_pairs(labels) == [(0, 1), (0, 3), (2, 3)]


def test_an_unlabelled_item_is_never_an_anchor_or_a_positive() -> None:
    labels: list[tuple[str, ...]] = [("x",), ("x",), ("y",), ("y",), ()]
    batches = anchor_positive_batches(labels, seed=0, batch_size=4, passes=3)
    assert batches and all(4 not in pair for b in batches for pair in b)


def test_anchor_batches_are_class_disjoint_and_cover_every_anchor() -> None:
    batches = anchor_positive_batches(LABELS, seed=0, batch_size=3, passes=2)
    anchors = [a for b in batches for a, _ in b]
    assert sorted(anchors) == sorted(list(range(12)) * 2)
    for b in batches:
        assert 2 <= len(b) <= 3
        intents = [LABELS[a][0] for a, _ in b]
        assert len(set(intents)) == len(intents)
        assert all(LABELS[a] == LABELS[p] and a != p for a, p in b)
    assert batches == anchor_positive_batches(LABELS, seed=0, batch_size=3, passes=2)


def test_a_continuation_trains_on_the_new_labels_with_other_intents_beside_them() -> None:
    """Issue 71 item 1: each new or changed label is an anchor once a pass, at most half of a
    batch; the rest of each batch replays other intents (one anchor each), class-disjoint."""
    labels = [(f"i{i // 4}",) for i in range(40)]  # 10 intents x 4 examples
    focus = [0, 1, 5, 12]  # two of i0, one of i1, one of i3
    batches = focus_batches(labels, focus, seed=0, batch_size=6, passes=3)
    anchors = [a for b in batches for a, _ in b]
    assert sorted(a for a in anchors if a in focus) == sorted(focus * 3)
    for b in batches:
        assert 2 <= len(b) <= 6
        assert sum(a in focus for a, _ in b) <= 3  # the new labels: at most half of it
        intents = [labels[a][0] for a, _ in b]
        assert len(set(intents)) == len(intents)  # every other item a true negative
        assert all(labels[a] == labels[p] and a != p for a, p in b)
    replayed = {labels[a][0] for a in anchors if a not in focus}
    assert len(replayed) >= 5  # other intents than the focus' own
    assert batches == focus_batches(labels, focus, seed=0, batch_size=6, passes=3)


def test_check_trainable_messages() -> None:
    with pytest.raises(ValueError, match="No labelled utterances"):
        check_trainable([(), ()])
    with pytest.raises(ValueError, match="at least 2 intents"):
        check_trainable([("a",), ("a",)])
    with pytest.raises(ValueError, match="too few: b"):
        check_trainable([("a",), ("a",), ("b",)])
    check_trainable(LABELS)
