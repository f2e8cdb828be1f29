"""Multi-label head, targets and label smoothing, thresholds, tuning and the project rule
(core/multilabel/)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.multilabel.head import HeadConfig, MultiLabelHead, load_head
from core.multilabel.metrics import multilabel_scores
from core.multilabel.rule import is_multilabel
from core.multilabel.targets import binary_targets, intents_of, smooth_targets
from core.multilabel.thresholds import (
    Thresholds,
    decide,
    thresholds_from_probabilities,
    validate_threshold,
)
from core.multilabel.tuning import tune_thresholds

pytestmark = pytest.mark.fast

FAST = HeadConfig(epochs=60, hidden=64, seed=0)


def toy_problem(n: int = 240, seed: int = 0) -> tuple[np.ndarray, list[tuple[str, ...]]]:
    """Three intents, each a direction in 8-d; an example is the sum of its intents plus noise."""
    rng = np.random.default_rng(seed)
    basis = np.eye(8, dtype=np.float32)[:3] * 2.0
    names = ("cancel", "refund", "transfer")
    x, y = [], []
    for _ in range(n):
        on = rng.random(3) < 0.4
        x.append(basis[on].sum(axis=0) + rng.normal(0, 0.3, 8))
        y.append(tuple(name for name, o in zip(names, on, strict=True) if o))
    return np.asarray(x, dtype=np.float32), y


# --- label smoothing -------------------------------------------------------------------------


def test_label_smoothing_exact_values() -> None:
    y = binary_targets([("a", "c"), ("b",), ()], ["a", "b", "c", "d"])
    t = smooth_targets(y, 0.95)
    # M = 2, |C| = 4: negatives (1 - 0.95) * 2 / 4 = 0.025
    np.testing.assert_allclose(t[0], [0.95, 0.025, 0.95, 0.025], rtol=1e-6)
    # M = 1: negatives 0.05 / 4 = 0.0125
    np.testing.assert_allclose(t[1], [0.0125, 0.95, 0.0125, 0.0125], rtol=1e-6)
    # no intent: M = 0, all-zero targets
    np.testing.assert_array_equal(t[2], [0.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(smooth_targets(y, 1.0), y)  # ls = 1 turns smoothing off


def test_targets_reject_unknown_labels_and_bad_smoothing() -> None:
    with pytest.raises(ValueError, match=r"label 'zzz' .* not one of the head's intents"):
        binary_targets([("zzz",)], ["a"])
    with pytest.raises(ValueError, match=r"label smoothing must be in \(0, 1\]"):
        smooth_targets(np.ones((1, 2)), 1.5)
    with pytest.raises(ValueError, match="label_smoothing must be in"):
        HeadConfig(label_smoothing=0.0)


# --- config ----------------------------------------------------------------------------------


def test_head_config_round_trip_and_validation() -> None:
    cfg = HeadConfig(epochs=7, max_steps=None, threshold=0.4)
    assert HeadConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    with pytest.raises(ValueError, match="unknown HeadConfig keys: \\['bogus'\\]"):
        HeadConfig.from_dict({"bogus": 1})
    with pytest.raises(ValueError, match="epochs must be a positive integer"):
        HeadConfig(epochs=0)
    with pytest.raises(ValueError, match=r"dropout must be in \[0, 1\)"):
        HeadConfig(dropout=1.0)
    with pytest.raises(ValueError, match="threshold must be strictly between 0 and 1"):
        HeadConfig(threshold=1.0)


def test_step_cap_cuts_epochs() -> None:
    head = MultiLabelHead(HeadConfig(epochs=600, max_steps=6000, batch_size=32))
    assert head.epochs_for(200) == 600  # 7 steps/epoch: cap does not bind
    assert head.epochs_for(1862) == 101  # 59 steps/epoch
    assert MultiLabelHead(HeadConfig(epochs=5, max_steps=None)).epochs_for(10**6) == 5


# --- thresholds ------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.2, 1.5, float("nan")])
def test_threshold_outside_open_interval_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match=r"threshold must be strictly between 0 and 1"):
        validate_threshold(bad)


def test_threshold_errors_name_the_culprit() -> None:
    with pytest.raises(ValueError, match="threshold for intent 'refund' must be strictly between"):
        Thresholds(0.3, {"refund": 2.0})
    with pytest.raises(ValueError, match="must be a number strictly between 0 and 1, got 'high'"):
        validate_threshold("high")  # type: ignore[arg-type]
    head = MultiLabelHead(FAST).fit(np.eye(3, dtype=np.float32), [("a",), ("b",), ()])
    with pytest.raises(ValueError, match="global threshold must be strictly between 0 and 1"):
        head.predict(np.eye(3, dtype=np.float32), thresholds=1.3)


def test_thresholds_round_trip_and_decide() -> None:
    t = Thresholds(0.3, {"b": 0.8})
    assert Thresholds.from_dict(json.loads(json.dumps(t.to_dict()))) == t
    proba = np.array([[0.35, 0.7, 0.1], [0.2, 0.9, 0.31]])
    assert decide(proba, ["a", "b", "c"], t) == [("a",), ("b", "c")]
    assert decide(proba, ["a", "b", "c"], 0.5) == [("b",), ("b",)]


def test_per_intent_tuning_beats_global_on_constructed_case() -> None:
    # Intent "quiet" is always under-confident (positives ~0.2, negatives ~0.05); "loud" is fine.
    rng = np.random.default_rng(0)
    n = 200
    gold = rng.random((n, 2)) < 0.5
    proba = np.where(gold, [0.2, 0.8], [0.05, 0.1]) + rng.normal(0, 0.02, (n, 2))
    intents = ["quiet", "loud"]
    tuned = thresholds_from_probabilities(proba, gold, intents, global_threshold=0.3)
    assert 0.05 < tuned.per_intent["quiet"] < 0.2
    assert tuned.for_intent("loud") == pytest.approx(0.3)  # flat F1 plateau: stays at global θ
    gold_sets = decide(gold.astype(float), intents, 0.5)
    f1_global = multilabel_scores(gold_sets, decide(proba, intents, 0.3))["micro_f1"]
    f1_tuned = multilabel_scores(gold_sets, decide(proba, intents, tuned))["micro_f1"]
    assert f1_tuned > f1_global + 0.3


def test_per_intent_tuning_falls_back_for_rare_intents() -> None:
    proba = np.array([[0.1, 0.9], [0.1, 0.1], [0.2, 0.8], [0.1, 0.2]])
    gold = np.array([[1, 1], [0, 0], [0, 1], [0, 0]])
    t = thresholds_from_probabilities(proba, gold, ["rare", "common"], min_support=2)
    assert "rare" not in t.per_intent and t.for_intent("rare") == 0.3
    assert "common" in t.per_intent


def test_tune_thresholds_cross_validates_on_the_pool() -> None:
    x, y = toy_problem(n=90)
    t = tune_thresholds(x, y, config=HeadConfig(epochs=15, hidden=32), folds=3)
    assert set(t.per_intent) == {"cancel", "refund", "transfer"}
    assert all(0 < v < 1 for v in t.per_intent.values())
    with pytest.raises(ValueError, match="folds must be between 2"):
        tune_thresholds(x, y, folds=1)


# --- the head --------------------------------------------------------------------------------


def test_head_learns_toy_multilabel_problem() -> None:
    x, y = toy_problem(seed=0)
    xt, yt = toy_problem(n=120, seed=1)
    head = MultiLabelHead(FAST).fit(x, y)
    assert head.intents == ("cancel", "refund", "transfer")
    proba = head.predict_proba(xt)
    assert proba.shape == (120, 3) and proba.dtype == np.float32
    scores = multilabel_scores(yt, head.predict(xt))
    # Chance (random sets at the label rate) gives micro F1 ~0.4.
    assert scores["micro_f1"] > 0.9
    assert scores["exact_match"] > 0.75


def test_no_intent_examples_are_learnt_as_empty() -> None:
    x, y = toy_problem(seed=0)
    assert any(len(s) == 0 for s in y)
    head = MultiLabelHead(FAST).fit(x, y)
    assert head.predict(np.zeros((1, 8), dtype=np.float32)) == [()]


def test_fit_is_seeded_and_leaves_global_rng_alone() -> None:
    import torch

    x, y = toy_problem(n=60)
    cfg = HeadConfig(epochs=5, hidden=16, seed=3)
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a = MultiLabelHead(cfg).fit(x, y).predict_proba(x)
    after = torch.rand(1)
    b = MultiLabelHead(cfg).fit(x, y).predict_proba(x)
    np.testing.assert_array_equal(a, b)
    assert torch.equal(before, after)


def test_fit_input_errors() -> None:
    x = np.eye(2, dtype=np.float32)
    with pytest.raises(ValueError, match="2 vectors but 1 label sets"):
        MultiLabelHead(FAST).fit(x, [("a",)])
    with pytest.raises(ValueError, match="every example has an empty label set"):
        MultiLabelHead(FAST).fit(x, [(), ()])
    with pytest.raises(RuntimeError, match="not fitted"):
        MultiLabelHead(FAST).predict_proba(x)
    head = MultiLabelHead(FAST).fit(x, [("a",), ("b",)])
    with pytest.raises(ValueError, match="vectors have dim 3, the head expects 2"):
        head.predict_proba(np.ones((1, 3), dtype=np.float32))


def test_save_load_gives_identical_probabilities(tmp_path) -> None:
    x, y = toy_problem(n=60)
    head = MultiLabelHead(HeadConfig(epochs=5, hidden=16)).fit(x, y)
    head.thresholds = Thresholds(0.3, {"refund": 0.6})
    head.save(tmp_path / "head")
    assert sorted(p.name for p in (tmp_path / "head").iterdir()) == [
        "head.json",
        "head.safetensors",
    ]
    loaded = load_head(tmp_path / "head")
    np.testing.assert_array_equal(loaded.predict_proba(x), head.predict_proba(x))
    assert loaded.intents == head.intents and loaded.config == head.config
    assert loaded.thresholds == head.thresholds
    assert loaded.predict(x) == head.predict(x)
    with pytest.raises(FileNotFoundError, match=r"has no head\.json"):
        load_head(tmp_path / "missing")


def test_is_multilabel_and_intents_of() -> None:
    assert is_multilabel([("a", "b"), ()]) and not is_multilabel([("a",), ("b",), ()])
    # one rule: at least 5 % of the labelled rows carry two or more intents
    assert is_multilabel([("a", "b")] + [("a",)] * 19)
    assert not is_multilabel([("a", "b")] + [("a",)] * 20 + [()] * 50)
    assert intents_of([("b", "a"), (), ("c",)]) == ("a", "b", "c")
