"""Multi-label metrics on a hand-computed example (core/multilabel_metrics.py)."""

from __future__ import annotations

import json

import pytest

from core.multilabel.metrics import (
    cooccurrence_table,
    multilabel_report,
    multilabel_scores,
    per_intent_scores,
)

pytestmark = pytest.mark.fast

GOLD = [("a", "b"), ("a",), ("b", "c"), ()]
PRED = [("a", "b"), ("a", "c"), ("b",), ()]
# Per intent: a tp 2 fp 0 fn 0; b tp 2 fp 0 fn 0; c tp 0 fp 1 fn 1.
# Micro: tp 4, fp 1, fn 1 -> P = R = F1 = 0.8. Macro F1 = (1 + 1 + 0) / 3.
# Exact match: rows 0 and 3 -> 0.5.


def test_scores_hand_computed() -> None:
    s = multilabel_scores(GOLD, PRED)
    assert s["micro_precision"] == pytest.approx(0.8)
    assert s["micro_recall"] == pytest.approx(0.8)
    assert s["micro_f1"] == pytest.approx(0.8)
    assert s["macro_f1"] == pytest.approx(2 / 3)
    assert s["exact_match"] == pytest.approx(0.5)
    assert s["n"] == 4


def test_per_intent_hand_computed() -> None:
    per = per_intent_scores(GOLD, PRED)
    assert per["a"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 2, "predicted": 2}
    assert per["c"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1, "predicted": 1}
    # An intent asked for but never seen is reported with zeros.
    assert per_intent_scores(GOLD, PRED, ["d"])["d"]["support"] == 0


def test_cooccurrence_hand_computed() -> None:
    rows = {(r["a"], r["b"]): r for r in cooccurrence_table(GOLD, PRED)}
    assert rows[("a", "b")] == {
        "a": "a",
        "b": "b",
        "gold": 1,
        "predicted": 1,
        "both": 1,
        "recall": 1.0,
    }
    assert rows[("b", "c")]["gold"] == 1 and rows[("b", "c")]["predicted"] == 0
    assert rows[("a", "c")]["gold"] == 0 and rows[("a", "c")]["predicted"] == 1
    assert set(rows) == {("a", "b"), ("b", "c"), ("a", "c")}


def test_report_is_json_with_primary() -> None:
    report = multilabel_report(GOLD, PRED)
    assert report["primary"] == "micro_f1"
    assert report[report["primary"]] == pytest.approx(0.8)
    assert json.loads(json.dumps(report)) == report


def test_empty_label_sets() -> None:
    # Nothing to find and nothing predicted: perfect.
    s = multilabel_scores([(), ()], [(), ()])
    assert s["micro_f1"] == 1.0 and s["exact_match"] == 1.0
    # Predicting an intent for a no-intent utterance is a false positive, not an exact match.
    s = multilabel_scores([(), ("a",)], [("a",), ("a",)])
    assert s["micro_precision"] == pytest.approx(0.5) and s["exact_match"] == pytest.approx(0.5)
    assert multilabel_report([], [])["per_intent"] == {}


def test_length_mismatch() -> None:
    with pytest.raises(ValueError, match="2 gold label sets but 1 predicted"):
        multilabel_scores([("a",), ()], [("a",)])
