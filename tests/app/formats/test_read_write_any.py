"""One place picks the format: read_any and write_any dispatch on the suffix, for every format."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings

from app.formats import FormatError, Row, read_any, write_any
from app.formats.agents import write_agent
from core.slots import SlotData
from tests.app.formats.rows import ANY_ROWS, LABELLED, ROWS, key

# Rasa and intent files hold labelled rows only; CSV and JSONL hold every row.
FORMATS = [(".csv", ROWS), (".jsonl", ROWS), (".yml", LABELLED), (".yaml", LABELLED)]
FORMATS += [(".zip", LABELLED), ("", LABELLED)]


@pytest.mark.parametrize(("suffix", "expected"), FORMATS)
def test_what_write_any_writes_read_any_reads_back(tmp_path, suffix, expected):
    path = tmp_path / f"out{suffix}"
    write_any(ROWS, path)
    assert key(read_any(path).rows) == key(expected)
    assert not list(tmp_path.glob("*.tmp"))  # written to a temporary name, then renamed


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".yml", ".zip"])
def test_bytes_are_read_by_the_suffix_given(tmp_path, suffix):
    path = tmp_path / f"out{suffix}"
    write_any(LABELLED, path)
    assert key(read_any(path.read_bytes(), suffix=suffix).rows) == key(LABELLED)


def test_an_unknown_suffix_is_refused():
    with pytest.raises(FormatError, match="Unsupported"):
        read_any(Path("x.xlsx"))
    with pytest.raises(FormatError, match=r"Unsupported file type '\.xlsx'"):
        read_any(b"whatever", suffix=".xlsx")


def test_an_unknown_suffix_is_written_as_csv(tmp_path):
    write_any(LABELLED, tmp_path / "out.data")
    assert (tmp_path / "out.data").read_text().startswith("text,labels,split\n")


def test_a_file_over_25_mb_is_refused_before_reading(tmp_path, monkeypatch):
    big = tmp_path / "big.yml"
    with big.open("wb") as fh:
        fh.truncate(26 * 1024 * 1024)
    monkeypatch.setattr(Path, "read_bytes", lambda self: pytest.fail("the file was read"))
    with pytest.raises(FormatError, match="limit is 25 MB"):
        read_any(big)


# Annotated, described rows with a context, an unlabelled one, and slot data no row carries: a
# lookup-only value (Rome) and a template without an annotated example.
ANNOTATED = [
    Row("fly me to Berlin", ("book_flight",), "train", "Where to?"),
    Row("from Oslo to Paris today", ("book_flight",), "test"),
    Row("hmm", (), "unlabelled"),
]
SLOTS = SlotData(
    {"city": ["Berlin", "Oslo", "Paris", "Rome"], "day": ["today"]},
    {"book_flight": ["fly me to {city}", "from {city} to {city} {day}", "book {city} for me"]},
    {
        "fly me to Berlin": [{"start": 10, "end": 16, "entity": "city"}],
        "from Oslo to Paris today": [
            {"start": 5, "end": 9, "entity": "city", "role": "from"},
            {"start": 13, "end": 18, "entity": "city"},
            {"start": 19, "end": 24, "entity": "day"},
        ],
    },
)
DESCRIBED = {"book_flight": "Booking a flight"}


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_csv_and_jsonl_keep_entity_annotations(tmp_path, suffix):
    """Issue 56 row 14: CSV and JSONL dropped the entity labels without a note; they carry them
    now (an ``entities`` column / key) and read them back into the slot data."""
    path = tmp_path / f"out{suffix}"
    notes = write_any(ANNOTATED, path, DESCRIBED, SLOTS)
    back = read_any(path)
    assert back.rows == ANNOTATED and back.descriptions == DESCRIBED
    assert back.slots.entities == SLOTS.entities
    assert back.slots.templates == {"book_flight": SLOTS.templates["book_flight"][:2]}
    assert any("Kept 4 entity annotation(s) of 2 utterance(s)" in n for n in back.notes)
    assert notes == [
        "Left out 1 slot value(s) and 1 template(s) that no annotated utterance carries: "
        "CSV and JSONL files have no place for them; export the slot book (slots.yml) to keep "
        "them."
    ]


@pytest.mark.parametrize("suffix", [".zip", ""])
def test_intent_files_name_everything_they_leave_out(tmp_path, suffix):
    notes = write_any(ANNOTATED, tmp_path / f"out{suffix}", DESCRIBED, SLOTS)
    where = "intent .txt files"
    assert notes == [
        f"Left out 1 unlabelled utterance(s): {where} hold labelled ones only.",
        f"Left out the context (the turn before) of 1 utterance(s): {where} have no place for it.",
        f"Left out 1 intent description(s): {where} have no place for them.",
        f"Left out 4 entity annotation(s) of 2 utterance(s): {where} have no place for them: "
        "'Berlin' (city in 'fly me to Berlin'), 'Oslo' (city in 'from Oslo to Paris today').",
        f"Left out 5 slot value(s) and 3 template(s) that no annotated utterance carries: {where} "
        "have no place for them; export the slot book (slots.yml) to keep them.",
    ]


def test_a_rasa_export_names_the_unlabelled_rows_and_the_templates_it_leaves_out(tmp_path):
    notes = write_any(ANNOTATED, tmp_path / "out.yml", DESCRIBED, SLOTS)
    assert notes == [
        "Left out 1 unlabelled utterance(s): Rasa NLU files hold labelled ones only.",
        "Left out 0 slot value(s) and 1 template(s) that no annotated utterance carries: Rasa "
        "NLU files have no place for them; export the slot book (slots.yml) to keep them.",
    ]


def test_an_agent_export_names_the_contexts_and_annotations_it_leaves_out(tmp_path):
    notes = write_any(ANNOTATED, tmp_path / "bot.zip", DESCRIBED, SLOTS, format="lex-v2")
    assert (
        "Left out the context (the turn before) of 1 utterance(s): platform agents have no "
        "place for it." in notes
    )
    # Lex's sample utterances hold slot references, not values: each is named (issue 66)
    (said,) = [n for n in notes if n.startswith("Left out 4 entity annotation(s) that are values")]
    assert "'Oslo' (city in 'from Oslo to Paris today')" in said


@pytest.mark.parametrize("fmt", ["luis", "clu"])
def test_luis_and_clu_exports_say_they_leave_descriptions_out(fmt):
    _, notes = write_agent(fmt, ANNOTATED[:2], DESCRIBED)
    assert any(n.startswith("Left out 1 intent description(s)") for n in notes), notes


@settings(max_examples=40, deadline=None)
@given(ANY_ROWS)
def test_any_text_and_context_round_trip_through_csv_and_jsonl(tmp_path_factory, data):
    rows = [
        Row(t, tuple(sorted(n)), split, serving_state)
        for t, (n, split, serving_state) in data.items()
    ]
    folder = tmp_path_factory.mktemp("rows")
    for suffix in (".csv", ".jsonl"):
        write_any(rows, folder / f"out{suffix}")
        assert key(read_any(folder / f"out{suffix}").rows) == key(rows), suffix


def test_a_text_under_two_intents_reads_the_same_from_every_format(tmp_path):
    """Issue 56 row 18: one rule for every format. The same project written as CSV rows (the
    text twice), Rasa items, intent files and an agent reads back as one multi-label row."""
    csv_file = tmp_path / "twice.csv"
    csv_file.write_text("text,label\nhi there,greet\nbye,bye\nhi there,hello\n")
    yml = tmp_path / "twice.yml"
    yml.write_text(
        "nlu:\n- intent: greet\n  examples: |\n    - hi there\n"
        "- intent: hello\n  examples: |\n    - hi there\n- intent: bye\n  examples: |\n    - bye\n"
    )
    expected = [("bye", ("bye",)), ("hi there", ("greet", "hello"))]
    for path in (csv_file, yml):
        assert sorted((r.text, r.labels) for r in read_any(path).rows) == expected, path
    merged = [Row("hi there", ("greet", "hello")), Row("bye", ("bye",))]
    for suffix, fmt in [(".zip", None), (".zip", "dialogflow-es"), (".json", "watson")]:
        path = tmp_path / f"{fmt}{suffix}"
        write_any(merged, path, {"greet": "", "hello": "", "bye": ""}, format=fmt)
        assert sorted((r.text, r.labels) for r in read_any(path).rows) == expected, fmt
