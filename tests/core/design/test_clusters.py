"""Candidate intents: planted groups of unlabelled utterances come back as clusters, named by
their own words, with their central examples and the nearest existing intent."""

from __future__ import annotations

import numpy as np
import pytest

from core.design.clusters import (
    MIN_UTTERANCES,
    RESEMBLES,
    Cluster,
    default_min_size,
    distinctive_words,
    find_clusters,
)
from core.evaluation.oos import calibrate_predictor
from core.retrieval.factory import PredictorFactory
from tests.samples import GIFT, HOURS, KLARNA

STRAYS = [
    "what's the weather like tomorrow",
    "recommend a good sleeping bag",
    "how do I delete my account",
    "thanks for your help",
    "ok",
    "I'd like to leave a complaint about the courier",
]


def test_planted_groups_are_found_and_named_by_their_own_words(encoder):
    texts = GIFT + HOURS + KLARNA + STRAYS
    clusters = find_clusters(encoder.encode(texts), texts)
    groups = {"gift": set(range(8)), "hours": set(range(8, 16)), "klarna": set(range(16, 24))}
    for word, rows in groups.items():
        best = max(clusters, key=lambda c: len(rows & set(c.members)))
        members = set(best.members)
        assert len(rows & members) >= 6, (word, best)  # most of the group
        assert len(members - rows) <= 1, (word, best)  # and little else
        assert word in " ".join(best.keywords[:2]) or (
            word == "hours" and {"open", "opening"} & set(best.keywords[:2])
        ), best.keywords
    gift = next(c for c in clusters if "gift" in c.keywords[:2])
    assert gift.central(2)[0] in groups["gift"] and "gift" in gift.suggested_name
    assert clusters == sorted(clusters, key=lambda c: -c.cohesion)  # most coherent first (no pool)
    assert [c.number for c in clusters] == list(range(1, len(clusters) + 1))


def test_the_most_coherent_cluster_is_listed_first_not_the_biggest():
    """A big loose group (what lumps several intents together) comes after a small tight one."""
    rng = np.random.default_rng(1)
    centres = np.eye(16, dtype=np.float32)
    loose = centres[0] + rng.normal(0, 0.12, (60, 16))
    tight = centres[1] + rng.normal(0, 0.02, (12, 16))
    texts = ["lost my card"] * 60 + ["open an account"] * 12
    clusters = find_clusters(np.vstack([loose, tight]).astype(np.float32), texts)
    assert len(clusters) == 2
    first, second = clusters
    assert first.size < second.size and first.cohesion > second.cohesion
    assert set(first.members) == set(range(60, 72)) and first.number == 1


def test_each_cluster_gets_its_nearest_existing_intent(encoder):
    texts = GIFT + HOURS + KLARNA
    pool = ["can I pay by paypal", "which payment methods do you accept", "is my card accepted"]
    pool += ["when will my parcel arrive", "track my order"]
    labels = [("payment_methods",)] * 3 + [("track_order",)] * 2
    predictor = PredictorFactory(encoder).build(pool, labels)
    clusters = find_clusters(encoder.encode(texts), texts, pool=predictor)
    klarna = next(c for c in clusters if "klarna" in c.keywords[:2])
    assert klarna.nearest_intent == "payment_methods"
    assert 0.3 < klarna.nearest_similarity <= 1.0


def test_a_cluster_the_model_puts_in_an_existing_intent_says_so_and_comes_after_the_new_ones(
    encoder,
):
    """Issue 58 item 7: on BANKING77 the top candidates were existing intents (#1 and #3 both
    change_pin). A cluster whose utterances the model mostly gives existing intents resembles
    them and is listed after the clusters that look new (out of scope of every intent)."""
    texts = GIFT + HOURS + KLARNA
    gift_pool = ["I want to buy a gift card", "can I send a gift voucher", "gift cards for sale?"]
    pool = [*gift_pool, "when will my parcel arrive", "track my order", "where is my package"]
    labels = [("gift_card",)] * 3 + [("track_order",)] * 3
    predictor = PredictorFactory(encoder).build(pool, labels)
    vectors = encoder.encode(texts)
    uncalibrated = find_clusters(vectors, texts, pool=predictor)  # every question gets a top
    assert all(not c.resembles for c in uncalibrated)
    predictor.thresholds = dict(calibrate_predictor(predictor).thresholds)  # as the app serves
    clusters = find_clusters(vectors, texts, pool=predictor)
    gift = next(c for c in clusters if "gift" in c.keywords[:2])
    members = vectors[list(gift.members)]
    decided = [
        None if out else top
        for top, out in zip(
            predictor.tops(members).intents, predictor.no_intent(members), strict=True
        )
    ]
    assert gift.resembles[0] == "gift_card" and gift.resembling == len(decided) - decided.count(
        None
    )
    assert gift.resembling >= RESEMBLES * gift.size
    hours = next(c for c in clusters if {"open", "opening", "hours"} & set(c.keywords[:2]))
    assert hours.resembles == ()  # out of scope of both intents
    like = [bool(c.resembles) for c in clusters]
    assert like == sorted(like) and clusters[-1] == gift  # the new ones first
    assert [c.number for c in clusters] == list(range(1, len(clusters) + 1))


def test_a_large_group_is_judged_on_a_sample_of_its_members_and_its_count_scaled(
    encoder, monkeypatch
):
    """Whether a group of a log dump resembles an existing intent is judged on a seeded sample
    of ``JUDGED`` of its members (the model ranked 165,000 members of 156 groups of a 250,000-row
    dump in 119 s), its count scaled to the group's size: the same decision as every member's."""
    from core.design import clusters as core_clusters

    texts = GIFT + HOURS + KLARNA
    gift_pool = ["I want to buy a gift card", "can I send a gift voucher", "gift cards for sale?"]
    pool = [*gift_pool, "when will my parcel arrive", "track my order", "where is my package"]
    predictor = PredictorFactory(encoder).build(pool, [("gift_card",)] * 3 + [("track_order",)] * 3)
    predictor.thresholds = dict(calibrate_predictor(predictor).thresholds)
    vectors = encoder.encode(texts)
    every = find_clusters(vectors, texts, pool=predictor)
    monkeypatch.setattr(core_clusters, "JUDGED", 4, raising=False)
    ranked: list[int] = []
    tops = predictor.tops
    monkeypatch.setattr(
        predictor, "tops", lambda v, *a, **k: ranked.append(len(v)) or tops(v, *a, **k)
    )
    judged = find_clusters(vectors, texts, pool=predictor)
    assert ranked and set(ranked) == {4 * len(judged)}  # 4 members of each group, not all
    assert [c.resembles for c in judged] == [c.resembles for c in every]
    gift = next(c for c in judged if "gift" in c.keywords[:2])
    assert gift.resembles[0] == "gift_card" and gift.resembling == gift.size  # 4 of 4, scaled


def test_fewer_than_the_minimum_of_utterances_is_refused_with_a_message():
    rng = np.random.default_rng(0)
    n = MIN_UTTERANCES - 1
    with pytest.raises(ValueError, match=rf"at least {MIN_UTTERANCES} unlabelled .* there are {n}"):
        find_clusters(rng.normal(size=(n, 8)), ["x"] * n)


def test_scattered_points_make_no_cluster():
    rng = np.random.default_rng(1)
    vecs = rng.normal(size=(40, 384))  # no dense region anywhere
    assert find_clusters(vecs, [f"text {i}" for i in range(40)]) == []


def test_distinctive_words_prefer_what_sets_a_group_apart():
    texts = ["card lost today", "lost my card today", "open account today", "account open today"]
    words = distinctive_words(texts, [0, 0, 1, 1], top=2)
    assert set(words[0]) == {"card", "lost"} and set(words[1]) == {"account", "open"}
    assert distinctive_words(["the", "a", "of it"], [0, 0, -1]) == {0: ()}  # stop words only


def test_names_and_sizes():
    c = Cluster(2, (5, 1, 9), ("card", "new-card", "lost"), 0.8)
    assert (c.size, c.central(2), c.title) == (3, (5, 1), "card · new-card · lost")
    assert c.suggested_name == "card_new_card"
    assert Cluster(4, (1,), (), 1.0).suggested_name == "candidate_4"
    assert default_min_size(50) == 3 and default_min_size(40_000) == 16


def test_past_the_sample_a_group_at_the_end_of_the_input_is_found_and_holds_all_its_rows(
    monkeypatch,
):
    """A log dump is clustered whole (issue 72 item 3): past ``SAMPLE`` rows HDBSCAN groups a
    seeded sample spread over the input, and every other row joins the nearest cluster it is as
    near as its members are, so a group that lies wholly past the first ``SAMPLE`` rows comes
    back with nearly all of its rows, and scattered rows join nothing."""
    from core.design import clusters

    monkeypatch.setattr(clusters, "SAMPLE", 120)
    rng = np.random.default_rng(3)
    scattered = rng.normal(size=(300, 384))  # no dense region
    tail = np.eye(384)[0] + rng.normal(0, 0.02, (60, 384))  # one tight group, rows 300 to 359
    texts = [f"stray {i}" for i in range(300)] + ["my parcel never came"] * 60
    found = clusters.find_clusters(np.vstack([scattered, tail]).astype(np.float32), texts)
    assert len(found) == 1
    tail_rows = set(range(300, 360))
    assert set(found[0].members) <= tail_rows  # no stray joined it
    # nearly all its rows: the sampled ones (about 20 of the 120) and those out of the sample
    assert len(found[0].members) >= 57
    assert found[0].keywords[:1] == ("parcel",) or "parcel" in found[0].keywords
