"""Rasa entity annotations and lookup tables are kept (slot book, templates, spans) and written
back; a slot book file is the same data for projects that do not come from Rasa."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.formats import FormatError, Row, dump_rasa_yaml, parse_rasa_yaml, read_any, write_any
from app.formats.slot_book import dump_slot_book, parse_slot_book

DATA = Path(__file__).resolve().parents[2] / "data"

DOC = b"""version: "3.1"
nlu:
- intent: book_flight
  examples: |
    - fly me to [Berlin](city)
    - from [Rome]{"entity": "city", "role": "from"} to [Oslo](city) [today](day)
    - a flight please
- lookup: city
  examples: |
    - Paris
    - Berlin
"""


def test_entities_feed_the_slot_book_and_templates_and_stay_on_the_surface_text():
    parsed = parse_rasa_yaml(DOC)
    assert [r.text for r in parsed.rows] == [
        "fly me to Berlin",
        "from Rome to Oslo today",
        "a flight please",
    ]
    slots = parsed.slots
    assert slots.book == {"city": ["Berlin", "Rome", "Oslo", "Paris"], "day": ["today"]}
    assert slots.templates == {"book_flight": ["fly me to {city}", "from {city} to {city} {day}"]}
    assert slots.entities["from Rome to Oslo today"] == [
        {"start": 5, "end": 9, "entity": "city", "role": "from"},
        {"start": 13, "end": 17, "entity": "city"},
        {"start": 18, "end": 23, "entity": "day"},
    ]
    assert "a flight please" not in slots.entities


def test_the_fixture_file_keeps_its_two_annotations_and_its_synonym_is_still_skipped():
    parsed = read_any(DATA / "rasa_nlu.yml")
    assert parsed.slots.book == {"city": ["Berlin", "Paris"]}
    assert parsed.slots.entities["a ticket to Paris please"] == [
        {"start": 12, "end": 17, "entity": "city", "value": "Paris"}
    ]
    assert any("1 synonym" in n for n in parsed.notes)


def test_rasa_export_writes_the_markup_and_lookup_tables_back_and_round_trips():
    parsed = parse_rasa_yaml(DOC)
    text = dump_rasa_yaml(parsed.rows, slots=parsed.slots)
    assert '- from [Rome]{"entity": "city", "role": "from"} to [Oslo](city) [today](day)' in text
    assert "- lookup: city" in text
    again = parse_rasa_yaml(text.encode())
    assert again.rows == parsed.rows
    assert again.slots.entities == parsed.slots.entities
    assert again.slots.templates == parsed.slots.templates
    assert {k: set(v) for k, v in again.slots.book.items()} == {
        k: set(v) for k, v in parsed.slots.book.items()
    }


def test_a_rasa_file_keeps_descriptions_and_entities_together(tmp_path):
    parsed = parse_rasa_yaml(DOC)
    path = tmp_path / "out.yml"
    write_any(
        parsed.rows, path, {"book_flight": "Booking a flight", "cancel": "Cancelling"}, parsed.slots
    )
    text = path.read_text(encoding="utf-8")
    assert '- intent: book_flight\n  metadata: {description: "Booking a flight"}\n' in text
    assert "fly me to [Berlin](city)" in text and "- lookup: city" in text
    again = read_any(path)
    assert again.descriptions == {"book_flight": "Booking a flight", "cancel": "Cancelling"}
    assert again.rows == parsed.rows
    assert again.slots.templates == parsed.slots.templates


def test_a_bad_annotation_is_a_listed_problem_and_nothing_is_imported():
    doc = b'nlu:\n- intent: a\n  examples: |\n    - to [x]{"role": "r"}\n    - to [y](my city)\n'
    with pytest.raises(FormatError) as err:
        parse_rasa_yaml(doc)
    assert (4, "the entity annotation '{\"role\": \"r\"}' needs an 'entity' name") in (
        err.value.problems
    )
    assert any("not a plain name" in msg for line, msg in err.value.problems if line == 5)


def test_a_slot_book_file_reads_as_slots_only_and_round_trips():
    doc = b"slot_book:\n  city: [Berlin, Paris]\ntemplates:\n  book_flight: ['to {city}']\n"
    parsed = read_any(doc, suffix=".yml")
    assert parsed.rows == []
    assert parsed.slots.book == {"city": ["Berlin", "Paris"]}
    assert parse_slot_book(dump_slot_book(parsed.slots).encode()).slots == parsed.slots
    with pytest.raises(FormatError, match="problem") as err:
        parse_slot_book(b"slot_book:\n  city: [Berlin, Berlin]\ncolour: red\n")
    assert any("listed twice" in msg for _, msg in err.value.problems)
    assert any("unknown key 'colour'" in msg for _, msg in err.value.problems)


def test_rows_without_annotations_export_exactly_as_before():
    rows = [Row("hello", ("greet",))]
    assert (
        dump_rasa_yaml(rows)
        == 'version: "3.1"\nnlu:\n- intent: greet\n  examples: |\n    - hello\n'
    )
