"""The gate's sample (issue 71 item 3): a fixed number of test questions, stratified by intent,
compared question by question with the version that serves."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from core.evaluation.paired import paired, stratified_sample

pytestmark = pytest.mark.fast


def questions(intents: int, per: int) -> list[tuple[str, ...]]:
    return [(f"intent_{i}",) for i in range(intents) for _ in range(per)]


def test_the_sample_keeps_every_intents_share_and_is_the_same_each_time() -> None:
    gold = questions(77, 40)  # 3,080 questions, as BANKING77's test split
    picked = stratified_sample(gold, 1000, seed=7)
    assert len(picked) == len(set(picked)) == 1000
    counts = Counter(gold[i][0] for i in picked)
    assert set(counts) == {g[0] for g in gold}  # every intent is in it
    assert max(counts.values()) - min(counts.values()) <= 1  # each about 13 of its 40
    assert stratified_sample(gold, 1000, seed=7) == picked
    assert stratified_sample(gold, 5000, seed=7) == list(range(len(gold)))  # no more to take


def test_the_gate_on_a_sample_refuses_a_version_that_is_worse_on_the_whole_split() -> None:
    """A constructed case: the new version answers as the old one everywhere but on two
    intents of 77, which it now gets wrong (2.6 points worse on the whole split, beyond the
    gate's tolerance of one point): every one of 20 samples of 1,000 says so."""
    gold = questions(77, 40)
    rng = random.Random(0)
    old = [rng.random() < 0.88 for _ in gold]  # the active version: about 88 % right
    lost = {"intent_3", "intent_40"}
    new = [hit and g[0] not in lost for hit, g in zip(old, gold, strict=True)]
    whole = paired(new, old)
    assert whole.diff < -0.02
    for seed in range(20):
        keep = stratified_sample(gold, 1000, seed)
        verdict = paired([new[i] for i in keep], [old[i] for i in keep])
        assert verdict.diff < -0.01, (seed, verdict.words())
        assert verdict.high < 0  # and the interval says it lost, not only its middle


def test_a_version_that_changes_nothing_ties_with_an_interval_of_zero() -> None:
    hits = [True, False, True, True]
    v = paired(hits, hits)
    assert (v.better, v.worse, v.diff, v.low, v.high) == (0, 0, 0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="differ in length"):
        paired(hits, hits[:3])
