"""The typed view of a version's stored metrics: what every reader of the history, the compare
view, the gate, the report and the serving decision reads."""

from __future__ import annotations

import math

import pytest

from app.services.models.evaluation import gate
from core.evaluation import score_predictions
from core.evaluation.version_metrics import VersionMetrics

pytestmark = pytest.mark.fast


def stored() -> dict[str, object]:
    """A retrain's stored metrics as they are written today (and were before the type)."""
    new = score_predictions(["a", "a", "b", "c"], ["a", "b", "b", "c"])
    base = score_predictions(["a", "a", "b", "c"], ["b", "b", "b", "c"])
    return {
        **new,
        "split": "test",
        "silhouette": 0.12,
        "k": 1,
        "base": base,
        "reference": {"version": None, "accuracy": base["accuracy"], "macro_f1": 0.5},
        "gate": {"passed": True, "reason": "promoted", "tolerance": 0.01},
        "int8": {"passed": True, "reason": "top-1 agreement 99.80%"},
        "train_seconds": 12.5,
        "steps": 40,  # a key the type does not name: kept
    }


def test_stored_metrics_read_as_fields_and_write_back_what_they_hold():
    m = VersionMetrics.from_dict(stored())
    assert (m.accuracy, m.n, m.split, m.primary) == (0.75, 4, "test", "accuracy")
    assert m.base is not None and m.base.accuracy == 0.5 and m.base.base is None
    assert m.int8_passed and m.gate["passed"] and m.extra == {"steps": 40}
    assert m.f1_by_intent() == {"a": 2 / 3, "b": 2 / 3, "c": 1.0}
    assert m.to_dict() == stored()  # nothing lost, nothing added
    assert VersionMetrics.from_dict(m.to_dict()) == m


def test_an_old_or_empty_record_reads_as_not_measured():
    for old in (None, {}, {"accuracy": 0.8}, {"accuracy": 0.8, "base": {}}):
        m = VersionMetrics.from_dict(old)
        assert m.base is None and not m.int8_passed and m.per_intent == {}
    assert VersionMetrics.from_dict({"accuracy": 0.8}).score == 0.8
    assert VersionMetrics.from_dict({"primary": "micro_f1", "micro_f1": float("nan")}).score is None


def test_the_gate_compares_the_primary_metric_and_never_promotes_on_a_missing_one():
    good = VersionMetrics.from_dict({"primary": "micro_f1", "micro_f1": 0.70, "accuracy": 0.1})
    ref = VersionMetrics.from_dict({"primary": "micro_f1", "micro_f1": 0.705, "accuracy": 0.9})
    assert gate(good, ref, 0.01)[0]  # within the tolerance on micro-F1; accuracy is not primary
    assert not gate(good, ref, 0.001)[0]
    broken = VersionMetrics.from_dict({"primary": "micro_f1", "micro_f1": math.nan})
    passed, why = gate(broken, ref, 0.5)
    assert not passed and "could not be compared" in why
    assert not gate(good, VersionMetrics(), 0.5)[0]
