"""The slot book and template rules (TaDSE): checks and templates from annotations."""

from __future__ import annotations

import pytest

from core.slots import (
    EntitySpan,
    SlotError,
    check_slot_name,
    check_template,
    check_templates,
    check_values,
    template_of,
)

pytestmark = pytest.mark.fast

BOOK = {"city": ["Berlin", "Paris", "Rome", "Oslo"], "day": ["today", "tomorrow"]}


def test_a_template_naming_a_slot_the_book_lacks_is_refused_with_its_name():
    with pytest.raises(SlotError, match=r"slot book lacks: time"):
        check_template("fly to {city} at {time}", BOOK)


def test_a_template_without_a_slot_and_an_empty_one_are_refused():
    with pytest.raises(SlotError, match="names no slot"):
        check_template("fly to Berlin", BOOK)
    with pytest.raises(SlotError, match="empty"):
        check_template("   ", BOOK)
    with pytest.raises(SlotError, match="listed twice"):
        check_templates(["to {city}", " to {city} "], BOOK)


def test_empty_and_repeated_values_and_odd_slot_names_are_refused():
    with pytest.raises(SlotError, match="empty value"):
        check_values("city", ["Berlin", " "])
    with pytest.raises(SlotError, match="'Berlin' is listed twice"):
        check_values("city", ["Berlin", "Paris", "Berlin "])
    with pytest.raises(SlotError, match="brace"):
        check_values("city", ["{Berlin}"])
    with pytest.raises(SlotError, match="not a plain name"):
        check_slot_name("my city")
    assert check_slot_name(" city_name ") == "city_name"


def test_the_template_of_an_annotated_utterance_replaces_each_value_by_its_slot():
    text = "from Berlin to Paris today"
    spans = [EntitySpan(15, 20, "city"), EntitySpan(5, 11, "city"), EntitySpan(21, 26, "day")]
    assert template_of(text, spans) == "from {city} to {city} {day}"
    with pytest.raises(SlotError, match="overlap"):
        template_of(text, [EntitySpan(5, 11, "city"), EntitySpan(8, 12, "city")])


def test_an_entity_span_round_trips_through_its_dict_with_only_the_extras_it_has():
    span = EntitySpan(0, 4, "city", value="Rome")
    assert span.to_dict() == {"start": 0, "end": 4, "entity": "city", "value": "Rome"}
    assert EntitySpan.from_dict(span.to_dict()) == span
