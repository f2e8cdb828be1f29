"""Issue 74 items 2 and 5: nothing a format cannot carry is lost without a word, and the round-trip
table of ``docs/formats.md`` is what the formats do, measured (``round_trip_table.py``), not
written by hand."""

from __future__ import annotations

import functools

import pytest

from tests.app.formats import round_trip_table as rt

pytestmark = pytest.mark.fast


@functools.cache
def measured() -> dict[str, dict[str, str]]:
    return {title: rt.measure(fmt) for title, fmt in rt.FORMATS.items()}


@pytest.mark.parametrize("title", list(rt.FORMATS))
def test_every_construct_comes_back_or_is_named_with_its_count(title):
    lost = {c: cell for c, cell in measured()[title].items() if cell.startswith("LOST")}
    assert lost == {}


def test_every_format_carries_what_it_has_a_place_for():
    cells = measured()
    for title in ("CSV", "JSONL", "Rasa `.yml`"):  # annotations whole, inline values and groups
        assert {c: cells[title][c] for c in rt.ANNOTATION_PARTS} == dict.fromkeys(
            rt.ANNOTATION_PARTS, "yes"
        )
    for title in ("Dialogflow ES", "Dialogflow CX", "LUIS", "CLU"):
        assert cells[title]["annotations (entity type)"] == "yes", title  # each keeps its type
    assert cells["Dialogflow CX"]["roles"] == "named, 3 of 4 back"  # TXL: from -> from_iata
    # a Watson counterexample (an out-of-scope phrase) is its text alone: its annotation is named
    assert cells["Watson"]["annotations (entity type)"] == "named, 7 of 8 back"


def test_the_docs_round_trip_table_is_the_measured_one():
    said = rt.in_docs(rt.DOCS.read_text(encoding="utf-8"))
    assert said == rt.table(), (
        "docs/formats.md's round-trip table is not what the formats do: run "
        "python -m tests.app.formats.round_trip_table"
    )
