from __future__ import annotations

import pytest

from core.training.pairs import (
    anchor_positive_batches,
    check_trainable,
    estimate_shots,
    positive_pairs,
    sample_pairs,
)

TEXTS = [f"u{i}" for i in range(12)]
LABELS = [(f"i{i // 3}",) for i in range(12)]  # 4 intents x 3 examples


def test_positives_share_a_label_and_negatives_share_none() -> None:
    pairs = sample_pairs(TEXTS, LABELS, seed=0, negatives=2)
    sets = [set(lab) for lab in LABELS]
    pos = [p for p in pairs if p.label == 1]
    neg = [p for p in pairs if p.label == 0]
    assert len(pos) == 4 * 3  # C(3, 2) per intent
    assert len(neg) == 2 * 2 * len(pos)
    assert all(sets[p.i] & sets[p.j] for p in pos)
    assert all(not (sets[p.i] & sets[p.j]) for p in neg)
    assert all(p.a == TEXTS[p.i] and p.b == TEXTS[p.j] for p in pairs)


def test_negatives_keep_one_side_of_their_positive() -> None:
    pairs = sample_pairs(TEXTS, LABELS, seed=1, negatives=1)
    pos = {(p.i, p.j) for p in pairs if p.label == 1}
    lefts = {i for i, _ in pos}
    rights = {j for _, j in pos}
    for p in pairs:
        if p.label == 0:
            assert p.i in lefts or p.j in rights


def test_same_seed_same_pairs_other_seed_differs() -> None:
    a = sample_pairs(TEXTS, LABELS, seed=3)
    assert a == sample_pairs(TEXTS, LABELS, seed=3)
    assert a != sample_pairs(TEXTS, LABELS, seed=4)


def test_multi_label_pairs_use_label_set_intersection() -> None:
    texts = ["a", "b", "c", "d"]
    labels = [("x", "y"), ("y",), ("z",), ("x", "z")]
    assert positive_pairs(labels) == [(0, 1), (0, 3), (2, 3)]
    for p in sample_pairs(texts, labels, seed=0, negatives=3):
        shared = set(labels[p.i]) & set(labels[p.j])
        assert bool(shared) == (p.label == 1)


def test_unlabelled_items_are_only_negatives() -> None:
    texts = ["a", "b", "c", "d", "none"]
    labels: list[tuple[str, ...]] = [("x",), ("x",), ("y",), ("y",), ()]
    pairs = sample_pairs(texts, labels, seed=0, negatives=3)
    assert all(4 not in (p.i, p.j) for p in pairs if p.label == 1)


def test_cap_sub_samples_pairs() -> None:
    pairs = sample_pairs(TEXTS, LABELS, seed=0, negatives=1, max_pairs=7)
    assert 0 < len(pairs) <= 7
    assert any(p.label == 1 for p in pairs)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"negatives": -1}, "negatives must be >= 0"),
        ({"max_pairs": 0}, "max_pairs must be >= 1"),
    ],
)
def test_bad_arguments_raise(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        sample_pairs(TEXTS, LABELS, seed=0, **kwargs)


def test_mismatched_lengths_and_string_labels_raise() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        sample_pairs(TEXTS, LABELS[:-1], seed=0)
    with pytest.raises(ValueError, match="tuples of intent names"):
        sample_pairs(["a", "b"], ["x", "x"], seed=0)  # type: ignore[arg-type]


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


def test_check_trainable_messages() -> None:
    with pytest.raises(ValueError, match="No labelled utterances"):
        check_trainable([(), ()])
    with pytest.raises(ValueError, match="at least 2 intents"):
        check_trainable([("a",), ("a",)])
    with pytest.raises(ValueError, match="too few: b"):
        check_trainable([("a",), ("a",), ("b",)])
    check_trainable(LABELS)


def test_estimate_shots_is_the_median() -> None:
    assert estimate_shots(LABELS) == 3
    assert estimate_shots([("a",)] * 2 + [("b",)] * 4) == 3
