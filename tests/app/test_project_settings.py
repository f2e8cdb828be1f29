"""A project's settings are read and checked in one place (ProjectSettings): defaults for what is
not stored, a round trip through the stored JSON, and refusals for values out of range."""

from __future__ import annotations

import pytest

from app.context import anchor_weight, encodes_context, oos_target
from app.project_settings import ProjectSettings
from app.services.int8 import serve_int8_setting
from core.evaluation.oos import DEFAULT_TARGET_RECALL
from core.retrieval.anchors import DEFAULT_ANCHOR_WEIGHT


def test_nothing_stored_reads_as_the_defaults_everywhere():
    s = ProjectSettings.from_dict(None)
    assert s == ProjectSettings.from_dict({})
    assert s.oos_target_recall == oos_target({}) == DEFAULT_TARGET_RECALL
    assert s.anchor_weight == anchor_weight({}) == DEFAULT_ANCHOR_WEIGHT
    assert s.encode_context is encodes_context({}) is False
    assert s.serve_int8 is serve_int8_setting({}) is True


def test_stored_values_round_trip_and_other_keys_are_left_alone():
    stored = {"oos_target_recall": None, "anchor_weight": 2, "encode_context": True}
    s = ProjectSettings.from_dict({**stored, "agent_format": "lex"})
    assert (s.oos_target_recall, s.anchor_weight, s.encode_context) == (None, 2.0, True)
    assert oos_target(stored) is None and anchor_weight(stored) == 2.0
    assert ProjectSettings.from_dict(s.to_dict()) == s
    assert set(s.to_dict()) == {
        "oos_target_recall",
        "anchor_weight",
        "encode_context",
        "serve_int8",
    }


@pytest.mark.parametrize(
    ("stored", "match"),
    [
        ({"oos_target_recall": 0.2}, "between 0.5 and 1"),
        ({"anchor_weight": -1}, "0 or more"),
        ({"anchor_weight": float("nan")}, "0 or more"),
    ],
)
def test_a_value_out_of_range_is_refused_with_its_rule(stored, match):
    with pytest.raises(ValueError, match=match):
        ProjectSettings.from_dict(stored)
