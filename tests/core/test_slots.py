"""The slot book and template rules (TaDSE): checks, templates from annotations, seeded filling,
compression of a query by the book."""

from __future__ import annotations

import pytest

from core.slots import (
    EntitySpan,
    SlotError,
    check_slot_name,
    check_template,
    check_templates,
    check_values,
    compress,
    fill_templates,
    template_of,
)

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


def test_filling_is_seeded_capped_per_intent_and_never_repeats_a_labelled_text():
    templates = {"book": ["fly to {city} {day}", "a ticket to {city}"], "cancel": ["cancel {day}"]}
    first = fill_templates(templates, BOOK, per_intent=5, seed=3, exclude={"cancel today"})
    again = fill_templates(templates, BOOK, per_intent=5, seed=3, exclude={"cancel today"})
    other = fill_templates(templates, BOOK, per_intent=5, seed=4, exclude={"cancel today"})
    assert first == again
    assert [f.text for f in first] != [f.text for f in other]
    per_intent = {i: [f for f in first if f.intent == i] for i in templates}
    assert len(per_intent["book"]) == 5  # capped
    assert [f.text for f in per_intent["cancel"]] == ["cancel tomorrow"]  # all the book allows
    assert len({f.text for f in first}) == len(first)
    # round robin: both templates of "book" are used, each filled text names its template
    assert {f.template for f in per_intent["book"]} == set(templates["book"])
    assert all(f.text.startswith(("fly to", "a ticket to")) for f in per_intent["book"])


def test_compression_replaces_known_values_as_whole_words_in_any_case():
    assert compress("fly to PARIS tomorrow", BOOK) == "fly to {city} {day}"
    assert compress("Parisian food", BOOK) == "Parisian food"
    assert compress("anything", {}) == "anything"


def test_an_entity_span_round_trips_through_its_dict_with_only_the_extras_it_has():
    span = EntitySpan(0, 4, "city", value="Rome")
    assert span.to_dict() == {"start": 0, "end": 4, "entity": "city", "value": "Rome"}
    assert EntitySpan.from_dict(span.to_dict()) == span


def test_compressed_vectors_mix_only_texts_with_a_known_value_and_refuse_a_weight_of_one():
    import numpy as np

    from core.slots import compressed_vectors

    calls: list[list[str]] = []

    def encode(texts):
        calls.append(list(texts))
        return np.array([[1.0, 0.0] if "{" in t else [0.0, 1.0] for t in texts])

    out = compressed_vectors(encode, ["fly to Rome", "hello"], BOOK, 0.2)
    assert calls == [["fly to Rome", "hello"], ["fly to {city}"]]  # only the changed one again
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)
    assert out[0, 0] > 0 and out[1].tolist() == [0.0, 1.0]
    assert compressed_vectors(encode, ["fly to Rome"], BOOK, 0.0).tolist() == [[0.0, 1.0]]
    with pytest.raises(ValueError, match=r"compression weight must be in \[0, 1\)"):
        compressed_vectors(encode, ["x"], BOOK, 1.0)
