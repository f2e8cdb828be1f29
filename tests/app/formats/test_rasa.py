"""Rasa NLU YAML: entities kept beside the surface text, multi-intent names, splits in metadata, every problem listed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings

from app.formats import FormatError, Row, dump_rasa_yaml, parse_rasa_yaml, read_any, write_any
from tests.app.formats.rows import ANY_ROWS, LABELLED, LABELLED_ROWS, ROWS, key

DATA = Path(__file__).resolve().parents[2] / "data"


def test_rasa_fixture_reads_with_notes():
    parsed = read_any(DATA / "rasa_nlu.yml")
    got = {r.text: r for r in parsed.rows}
    assert got["fly me to Berlin"].labels == ("book_flight",)
    assert got["a ticket to Paris please"].labels == ("book_flight",)
    assert got["how much do I have and send 20 to Ana"].labels == (
        "check_balance",
        "transfer_money",
    )
    assert got["bye for now"].split == "test"
    assert "pink pig" not in got
    assert parsed.flattened_entities == 2
    assert any("Kept 2 entity annotation(s)" in n for n in parsed.notes)
    assert any("1 synonym" in n for n in parsed.notes)


def test_rasa_can_keep_entity_markup():
    parsed = parse_rasa_yaml((DATA / "rasa_nlu.yml").read_bytes(), keep_entity_markup=True)
    assert "fly me to [Berlin](city)" in {r.text for r in parsed.rows}
    assert parsed.flattened_entities == 0


def test_rasa_round_trip():
    text = dump_rasa_yaml(ROWS)
    assert text.startswith('version: "3.1"\nnlu:\n')
    assert "- intent: check_balance+transfer_money" in text
    assert "not labelled yet" not in text
    assert key(parse_rasa_yaml(text.encode()).rows) == key(LABELLED)


def test_rasa_bad_file_lists_every_problem():
    with pytest.raises(FormatError) as err:
        parse_rasa_yaml((DATA / "rasa_bad.yml").read_bytes())
    problems = err.value.problems
    assert (7, "an example line must start with '- ': 'not an example line'") in problems
    assert (8, "unknown key 'colour' in intent item") in problems
    assert "Nothing was imported." in str(err.value)


@pytest.mark.parametrize(
    ("doc", "match"),
    [
        (b"nlu:\n- intent: a\n  examples: |\n    - ok\n    - \xff\n", "not valid UTF-8"),
        (b"nlu: [\n", "not valid YAML"),
        (b"version: '3.1'\n", "no 'nlu:' section"),
        (b"nlu:\n- intent: a\n  examples: |\n    -  \n", "1 problem"),
        (b"stuff: 1\nnlu: []\n", "1 problem"),
        (b"nlu:\n- intent: a\n  examples: |\n    - " + b"x" * 2001 + b"\n", "1 problem"),
        (b"nlu:\n- intent: a|b\n  examples: |\n    - ok\n", "1 problem"),
    ],
)
def test_rasa_refuses(doc, match):
    with pytest.raises(FormatError, match=match):
        parse_rasa_yaml(doc)


def test_rasa_invalid_utf8_has_line_number():
    with pytest.raises(FormatError) as err:
        parse_rasa_yaml(b"nlu:\n- intent: a\n  examples: |\n    - \xff\n")
    assert err.value.problems[0][0] == 4


@settings(max_examples=40, deadline=None)
@given(LABELLED_ROWS)
def test_rasa_round_trips_property(data):
    rows = [Row(t, tuple(sorted(labels)), split) for t, (labels, split) in data.items()]
    assert key(parse_rasa_yaml(dump_rasa_yaml(rows).encode()).rows) == key(rows)


def test_a_text_under_two_intents_is_imported_once_with_both_and_reported():
    data = b"nlu:\n- intent: a\n  examples: |\n    - same\n- intent: b\n  examples: |\n    - same\n"
    parsed = read_any(data, suffix=".yml")
    assert [(r.text, r.labels) for r in parsed.rows] == [("same", ("a", "b"))]
    assert any("'same' (a + b)" in n for n in parsed.notes)


# A real Watson agent's texts hold C1 controls (here NEL, CSI and PAD); someone typed what looks
# like Rasa markup; a row has a context (the bot's question before it).
HOSTILE = [
    Row("Hi\x85there \x9b[2J \x80ok", ("greet",)),
    Row("fly to [Berlin](city) or ]\\(not)", ("book_flight",)),
    Row("yes please", ("confirm",), "train", "Shall I\u2028cancel it?"),
    Row("rub\x7fout", ("greet",), "test"),
]


def test_c1_controls_literal_markup_and_contexts_come_back_from_a_rasa_export(tmp_path):
    """Issue 56 row 14: the Rasa export wrote C1 characters raw (PyYAML and the app's own import
    refused the file), a literal ``[Berlin](city)`` came back as an annotation, and a row's
    context was dropped, each without a word."""
    path = tmp_path / "out.yml"
    notes = write_any(HOSTILE, path)
    text = path.read_text(encoding="utf-8")
    assert text.isprintable() or all(c.isprintable() or c == "\n" for c in text)
    assert yaml.safe_load(text)["nlu"]  # PyYAML reads it
    back = read_any(path)
    assert key(back.rows) == key(HOSTILE)
    assert not back.slots.entities and not back.slots.book  # the markup was text, not a slot
    assert notes == []  # Rasa carries all of it


@settings(max_examples=60, deadline=None)
@given(ANY_ROWS)
def test_any_text_and_context_round_trip_through_rasa(data):
    rows = [
        Row(t, tuple(sorted(n)), split, serving_state)
        for t, (n, split, serving_state) in data.items()
    ]
    written = dump_rasa_yaml(rows)
    assert key(parse_rasa_yaml(written.encode()).rows) == key(rows)
    assert yaml.safe_load(written)["nlu"]
