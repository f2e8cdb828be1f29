"""Agreement statistics: Krippendorff's α against the worked example of Krippendorff (2011,
"Computing Krippendorff's alpha-reliability", nominal data with missing answers), MASI's partial
credit for multi-label sets, and None where a statistic is undefined."""

from __future__ import annotations

import pytest

from core.labelling.agreement import agreement, alpha, kappa, masi

pytestmark = pytest.mark.fast

# Krippendorff (2011), section C: 4 observers x 12 units, None = no answer; alpha = 0.743.
WORKED = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


def _sets(rows):
    return [[None if v is None else frozenset([str(v)]) for v in row] for row in rows]


def test_alpha_reproduces_krippendorffs_worked_example_with_missing_answers():
    assert alpha(_sets(WORKED)) == pytest.approx(0.743, abs=5e-4)


def test_masi_gives_partial_credit_for_overlapping_label_sets_and_none_for_disjoint_ones():
    a, ab, c = frozenset("a"), frozenset("ab"), frozenset("c")
    assert masi(a, a) == 0 and masi(a, c) == 1
    assert 0 < masi(ab, a) < masi(ab, frozenset("bc")) < 1
    answers = {
        1: {"ana": {"a", "b"}, "ben": {"a"}},
        2: {"ana": {"c"}, "ben": {"c"}},
        3: {"ana": {"a", "b"}, "ben": {"b"}},
        4: {"ana": {"d"}, "ben": {"d"}},
    }
    found = agreement(answers)
    assert found.alpha is not None and found.alpha_masi is not None
    assert found.alpha_masi > found.alpha  # near misses count as near
    assert found.disputed == (1, 3)


def test_statistics_are_none_where_undefined_never_nan():
    assert kappa(["a"], ["a"]) is None  # one item
    assert kappa(["a", "a"], ["a", "a"]) is None  # one value: no chance agreement to correct
    same = {1: {"ana": {"a"}, "ben": {"a"}}, 2: {"ana": {"a"}, "ben": {"a"}}}
    found = agreement(same)
    assert found.alpha is None and found.pairs[0].kappa is None and found.disputed == ()
    assert agreement({1: {"ana": {"a"}}}).items == 0  # one answer is not an overlap


def test_per_intent_agreement_uses_alpha_with_three_annotators_and_lists_disputes():
    answers = {
        1: {"ana": {"fee"}, "ben": {"fee"}, "cal": {"fee"}},
        2: {"ana": {"fee"}, "ben": {"card"}, "cal": {"fee"}},
        3: {"ana": {"card"}, "ben": {"card"}, "cal": {"card"}},
        4: {"ana": {"card"}, "ben": {"card"}},
    }
    found = agreement(answers)
    assert len(found.pairs) == 3 and found.annotators == ("ana", "ben", "cal")
    by_intent = {i.intent: i for i in found.intents}
    assert by_intent["fee"].statistic == "alpha" and by_intent["fee"].disputed == (2,)
    assert by_intent["card"].disputed == (2,)
    assert found.intents[-1].value is None or found.intents[0].value <= found.intents[-1].value
