from __future__ import annotations

import math

import numpy as np
import pytest

from core.evaluation.space import (
    alignment,
    first_label,
    geometry_diff,
    intent_geometry,
    space_metrics,
    uniformity,
)


def _clustered(seed: int = 0) -> tuple[np.ndarray, list[str]]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(4, 32))
    x = np.concatenate([c + rng.normal(scale=0.05, size=(15, 32)) for c in centres])
    return x, [f"intent_{i}" for i in range(4) for _ in range(15)]


def test_clustered_space_beats_random_space() -> None:
    x, labels = _clustered()
    rand = np.random.default_rng(1).normal(size=x.shape)
    good, bad = space_metrics(x, labels), space_metrics(rand, labels)
    assert good["silhouette"] > 0.8 > 0.1 > bad["silhouette"]
    assert good["alignment"] < bad["alignment"]
    assert -8.0 <= bad["uniformity"] <= 0.0
    assert bad["uniformity"] < good["uniformity"]  # random points are spread more evenly
    assert good["n_points"] == 60 and good["n_intents"] == 4


def test_unlabelled_skipped_and_multilabel_uses_first() -> None:
    x, labels = _clustered()
    mixed: list[str | list[str] | None] = list(labels)
    mixed[0] = None
    mixed[1] = []
    mixed[2] = ["intent_0", "intent_3"]
    m = space_metrics(x, mixed)
    assert m["n_labelled"] == 58
    assert first_label(["b", "a"]) == "b"
    assert first_label("") is None


def test_degenerate_inputs_give_nan() -> None:
    x = np.random.default_rng(0).normal(size=(5, 8))
    m = space_metrics(x, ["a"] * 5)
    assert math.isnan(m["silhouette"])
    assert not math.isnan(m["alignment"])
    assert math.isnan(alignment(x, ["a", "b", "c", "d", "e"]))
    assert math.isnan(uniformity(x[:1]))
    with pytest.raises(ValueError, match="labels"):
        space_metrics(x, ["a"])


def test_sampled_alignment_close_to_exact() -> None:
    x, labels = _clustered()
    rand = np.random.default_rng(2).normal(size=x.shape)
    exact = alignment(rand, labels)
    sampled = alignment(rand, labels, max_pairs=300)
    assert abs(exact - sampled) < 0.1


def test_real_encoder_separates_intents(encoder) -> None:
    texts = [
        "Where is my new card?",
        "My card still hasn't arrived",
        "When will my card get here?",
        "I want to top up my account",
        "How do I add money with top up?",
        "Top up my balance please",
        "What is the exchange rate for euros?",
        "How much is a dollar in pounds?",
        "Which exchange rate do you use?",
    ]
    labels = ["card_arrival"] * 3 + ["top_up"] * 3 + ["exchange_rate"] * 3
    vecs = encoder.encode(texts)
    real = space_metrics(vecs, labels)
    shuffled = space_metrics(vecs, [labels[i] for i in (0, 3, 6, 1, 4, 7, 2, 5, 8)])
    assert real["silhouette"] > shuffled["silhouette"]
    assert real["alignment"] < shuffled["alignment"]


def test_the_map_diff_says_which_intents_got_tighter_and_further_apart() -> None:
    x, labels = _clustered()
    rng = np.random.default_rng(2)
    blurred = x.copy()
    blurred[:15] += rng.normal(scale=0.8, size=(15, 32))  # intent_0 spread out before tuning
    before, after = intent_geometry(blurred, labels), intent_geometry(x, labels)
    assert before["intent_0"]["spread"] > after["intent_0"]["spread"]
    rows = geometry_diff(before, after)
    assert rows[0]["intent"] == "intent_0" and rows[0]["tighter"] > 0.1  # biggest move first
    assert {r["intent"] for r in rows} == {f"intent_{i}" for i in range(4)}
    assert all(r["nearest_after"] != r["intent"] for r in rows)
    unlabelled = intent_geometry(x, [None] * len(x))
    assert unlabelled == {}
