"""The rules every format shares: UTF-8 (BOM dropped), the size limit, row checks, duplicates."""

from __future__ import annotations

import pytest

from app.formats import common
from app.formats.common import (
    FormatError,
    Row,
    check_intent,
    check_size,
    check_text,
    decode,
    finish,
    merge_repeats,
)


def test_decode_drops_a_bom_and_names_the_line_of_a_bad_byte():
    assert decode("\ufefftext,label\n".encode()) == "text,label\n"
    with pytest.raises(FormatError, match="not valid UTF-8") as err:
        decode(b"ok\nok\ncaf\xe9\n")
    assert err.value.problems == [(3, "invalid byte at offset 9")]


def test_size_limit_says_the_limit():
    check_size(25 * 1024 * 1024)
    with pytest.raises(FormatError, match=r"is 25\.0 MB; the limit is 25 MB"):
        check_size(25 * 1024 * 1024 + 1)
    with pytest.raises(FormatError, match=r"greet\.txt is"):
        decode(b"x" * (25 * 1024 * 1024 + 1), "greet.txt")


@pytest.mark.parametrize(
    ("text", "problem"),
    [("  \u200b ", "empty text"), ("a" * 2001, "2001 characters"), ("a\x00b", "NUL")],
)
def test_text_rules(text, problem):
    assert problem in (check_text(text) or "")
    assert check_text("hello") is None


@pytest.mark.parametrize(
    ("name", "problem"), [("", "empty"), ("x" * 121, "at most 120 characters"), ("a|b", "'|'")]
)
def test_intent_rules(name, problem):
    assert problem in (check_intent(name) or "")
    assert check_intent("card/lost") is None


def test_finish_sorts_problems_by_line_and_lets_repeats_through():
    found = [(2, "", Row("hi", ("a",))), (5, "", Row("hi", ("b",)))]
    with pytest.raises(FormatError, match="2 problem") as err:
        finish(found, [(9, "late"), (1, "early")])
    assert err.value.problems == [(1, "early"), (9, "late")]
    assert finish(found, []) == [row for _, _, row in found]


def test_merge_repeats_keeps_every_intent_and_reports_what_it_merged():
    """Issue 56 row 18: a text under two intents kept only the first in CSV, JSONL and Rasa,
    while agent formats and intent files kept it under both: every format now keeps them all
    (one multi-label row) and says so; a text in two splits keeps its first labelled row's."""
    rows = [
        Row("hi", ("greet",)),
        Row("bye", ("bye",)),
        Row("hi", ("greet",), "test"),
        Row("hi", ("hello",)),
        Row("bye", ()),
        Row("later", (), "unlabelled"),
        Row("later", ("bye",), "test", "Anything else?"),
    ]
    kept, notes = merge_repeats(rows)
    assert kept == [
        Row("hi", ("greet", "hello")),
        Row("bye", ("bye",)),
        Row("later", ("bye",), "test", "Anything else?"),
    ]
    assert notes[0] == "Merged 2 repeated utterance(s) with the same intents."
    assert notes[1] == (
        "1 utterance(s) appear with different intents; each was imported once with all of them "
        "(multi-label): 'hi' (greet + hello)."
    )
    assert notes[2] == (
        "1 utterance(s) appear in another split or with another context too; each kept its "
        "first: 'hi' (train; also test split)."
    )
    assert merge_repeats([Row("a", ("x",))]) == ([Row("a", ("x",))], [])


def test_finish_refuses_no_rows_and_too_many(monkeypatch):
    with pytest.raises(FormatError, match="no rows"):
        finish([], [])
    monkeypatch.setattr(common, "MAX_ROWS", 1)
    found = [(1, "", Row("a", ("x",))), (2, "", Row("b", ("x",)))]
    with pytest.raises(FormatError, match="2 rows; the limit is 1"):
        finish(found, [])


def test_error_shows_the_first_problems_and_says_nothing_was_imported():
    err = FormatError("12 problem(s) in the file.", [(n, "empty text") for n in range(1, 13)])
    text = str(err)
    assert "line 1: empty text" in text and "and 4 more problem(s)" in text
    assert text.endswith("Nothing was imported.")
