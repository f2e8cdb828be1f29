"""A folder or zip of intent .txt files: round trips, one top folder, hostile zips, every problem."""

from __future__ import annotations

import zipfile

import pytest
from hypothesis import given, settings

from app.formats import (
    FormatError,
    Row,
    dump_intent_files,
    parse_intent_files,
    read_any,
    read_intent_folder,
)
from app.formats.common import merge_repeats
from app.formats.intent_files import write_intent_folder, write_intent_zip
from tests.app.formats.rows import LABELLED, LABELLED_ROWS, ROWS, key


def test_intent_folder_round_trip(tmp_path):
    files = dump_intent_files(ROWS)
    assert "greet.txt" in files and "test/goodbye.txt" in files and "card%2Flost.txt" in files
    assert files["check_balance.txt"] == "how much do I have and send 20 to Ana\n"
    write_intent_folder(ROWS, tmp_path / "out")
    parsed = read_intent_folder(tmp_path / "out")
    assert key(parsed.rows) == key(LABELLED)
    assert any("multi-label" in n for n in parsed.notes)


def test_intent_zip_round_trip(tmp_path):
    z = tmp_path / "intents.zip"
    z.write_bytes(write_intent_zip(ROWS))
    assert key(read_any(z).rows) == key(LABELLED)


def test_zip_with_one_top_folder(tmp_path):
    z = tmp_path / "wrapped.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("intents/greet.txt", "hi\n\nhello\n")
        zf.writestr("intents/.DS_Store", "junk")
        zf.writestr("__MACOSX/intents/._greet.txt", "junk")
    rows = read_intent_folder(z).rows
    assert rows == [Row("hi", ("greet",)), Row("hello", ("greet",))]


def test_intent_files_refuse_bad_content():
    with pytest.raises(FormatError) as err:
        parse_intent_files(
            {
                "greet.txt": b"hi\nhi\n",
                "bye.txt": b"ok\n\xfe\n",
                "notes.md": b"# readme",
                "x/y/z.txt": b"deep",
                "long.txt": ("x" * 2001).encode(),
            }
        )
    msgs = [m for _, m in err.value.problems]
    assert not any("greet.txt" in m for m in msgs)  # a line twice in one file is kept once
    assert any(m.startswith("bye.txt: invalid byte") for m in msgs)
    assert any(m.startswith("notes.md: unexpected file") for m in msgs)
    assert any(m.startswith("x/y/z.txt: unexpected file") for m in msgs)
    assert any(m.startswith("long.txt: text is 2001 characters") for m in msgs)


def test_same_text_in_train_and_test_is_imported_once_and_reported():
    parsed = parse_intent_files({"a.txt": b"same\n", "test/b.txt": b"same\n"})
    rows, notes = merge_repeats(parsed.rows)
    assert [(r.text, r.labels, r.split) for r in rows] == [("same", ("a", "b"), "train")]
    assert "'same' (a + b)" in notes[0] and "'same' (train; also test split)" in notes[1]


def test_hostile_zip_is_refused(tmp_path):
    z = tmp_path / "evil.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("../greet.txt", "hi\n")
    with pytest.raises(FormatError, match=r"'\.\.'"):
        read_intent_folder(z)


def test_no_utterances_is_refused():
    with pytest.raises(FormatError, match="no utterances"):
        parse_intent_files({"a.txt": b"\n\n"})


@settings(max_examples=40, deadline=None)
@given(LABELLED_ROWS)
def test_intent_files_round_trip_property(data):
    rows = [Row(t, tuple(sorted(labels)), split) for t, (labels, split) in data.items()]
    files = {k: v.encode() for k, v in dump_intent_files(rows).items()}
    assert key(parse_intent_files(files).rows) == key(rows)


def test_a_text_with_line_separators_other_than_lf_stays_one_line():
    """Issue 56 row 14: NEL, VT, FF and U+2028 are characters of a text (a Watson agent's), not
    line ends: an intent file written with one reads back as the one text."""
    rows = [Row("a\x85b\u2028c\x0bd\x0ce\x1cf", ("x",)), Row("g", ("x",))]
    files = {k: v.encode() for k, v in dump_intent_files(rows).items()}
    assert parse_intent_files(files).rows == rows
