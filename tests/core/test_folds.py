"""One fold splitter for every cross-validation: stratified, seeded, every row once."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from core.folds import fold_assignments

pytestmark = pytest.mark.fast

LABELS = [("a",)] * 10 + [("b",)] * 7 + [("a", "b")] * 4 + [()] * 3


def test_every_row_is_in_exactly_one_fold_and_folds_are_even():
    assign = fold_assignments(LABELS, 5)
    assert assign.shape == (len(LABELS),) and set(assign.tolist()) == set(range(5))
    sizes = Counter(assign.tolist()).values()
    assert max(sizes) - min(sizes) <= 1


def test_each_label_set_is_spread_over_the_folds():
    assign = fold_assignments(LABELS, 5)
    for key in {tuple(lab) for lab in LABELS}:
        rows = [i for i, lab in enumerate(LABELS) if tuple(lab) == key]
        per_fold = Counter(assign[rows].tolist())
        assert max(per_fold.values()) - min(per_fold.get(f, 0) for f in range(5)) <= 1


def test_the_same_seed_gives_the_same_split_and_another_seed_another():
    a, b = fold_assignments(LABELS, 5, seed=1), fold_assignments(LABELS, 5, seed=1)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, fold_assignments(LABELS, 5, seed=2))


def test_single_intent_names_and_label_tuples_split_alike():
    names = ["x", "y", "x", "y", "x", "y"]
    assert np.array_equal(fold_assignments(names, 2), fold_assignments([(n,) for n in names], 2))


@pytest.mark.parametrize(("n", "folds"), [(3, 5), (10, 1)])
def test_impossible_splits_are_refused(n, folds):
    with pytest.raises(ValueError, match=r"folds|at least"):
        fold_assignments([("a",)] * n, folds)
