"""CSV and JSONL: columns, labels, splits and contexts checked row by row; what is written reads back."""

from __future__ import annotations

import csv
import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.formats import FormatError, Row, parse_csv, parse_jsonl, read_any, write_csv, write_jsonl


def test_csv_reads_labels_splits_and_context():
    data = "\ufefftext,labels,split,context\nrefund me,refund|cancel,test,order 7\nhi,,,\n"
    assert parse_csv(data.encode()) == [
        Row("refund me", ("cancel", "refund"), "test", "order 7"),
        Row("hi", (), "unlabelled"),
    ]


def test_jsonl_takes_a_list_or_a_bar_separated_string():
    lines = [{"text": "a", "labels": ["x", "y"]}, {"text": "b", "label": "x|z"}]
    rows = parse_jsonl("\n".join(json.dumps(x) for x in lines).encode())
    assert [r.labels for r in rows] == [("x", "y"), ("x", "z")]


def test_an_intent_name_with_a_bar_is_refused_in_jsonl():
    with pytest.raises(FormatError, match="cannot contain '\\|'"):
        parse_jsonl(b'{"text": "a", "labels": ["x|y"]}\n')


@pytest.mark.parametrize(("write", "read"), [(write_csv, parse_csv), (write_jsonl, parse_jsonl)])
def test_written_rows_read_back(write, read):
    rows = [Row('a, "quoted"', ("x", "y")), Row("b", ("x",), "test"), Row("c", (), "unlabelled")]
    assert read(write(rows).encode()) == rows


@pytest.mark.parametrize(("write", "read"), [(write_csv, parse_csv), (write_jsonl, parse_jsonl)])
def test_contexts_are_written_and_read_back(write, read):
    rows = [
        Row("yes please", ("cancel_card",), "train", "Do you want to cancel your card?"),
        Row("no thanks", ("decline",), "test"),  # no context: none comes back
        Row("=1+1", ("math",), "train", "=what is it?"),  # a formula-like context stays text
    ]
    assert read(write(rows).encode()) == rows


def test_files_without_contexts_are_written_as_before():
    rows = [Row("hi", ("greet",))]
    assert write_csv(rows) == "text,labels,split\nhi,greet,train\n"
    assert "context" not in write_jsonl(rows)
    assert write_csv([*rows, Row("yes", ("ok",), "train", "Shall I?")]).startswith(
        "text,labels,split,context\nhi,greet,train,\n"
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            b"text,label,context\nyes,ok," + b"x" * 2001 + b"\n",
            "line 2: Context is longer than 2000",
        ),
        (b'{"text": "yes", "label": "ok", "context": "a\\u0000b"}\n', "Context contains a NUL"),
    ],
)
def test_a_bad_context_is_refused_with_its_line(data, message):
    parse = parse_jsonl if data.startswith(b"{") else parse_csv
    with pytest.raises(FormatError, match=message):
        parse(data)


def test_a_blank_context_is_no_context():
    assert parse_csv(b"text,label,context\nyes,ok,   \n")[0].context == ""


cell = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=30)


@settings(
    max_examples=60,
    deadline=None,
)
@given(
    rows=st.lists(
        st.tuples(cell, cell, st.sampled_from(["", "train", "test", "unlabelled", "bogus"])),
        max_size=8,
    )
)
def test_random_csv_content_is_either_fully_valid_or_refused(rows):
    """Property: reading never crashes with anything but FormatError, and what it accepts obeys
    every rule (non-empty stripped text, known split, each text once, no labels on unlabelled)."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["text", "labels", "split"])
    w.writerows(rows)
    try:
        parsed = read_any(buf.getvalue().encode(), suffix=".csv").rows
    except FormatError as exc:
        assert str(exc).endswith("Nothing was imported.")
        return
    texts = [r.text for r in parsed]
    assert len(texts) == len(set(texts))
    for r in parsed:
        assert r.text == r.text.strip() and r.text
        assert r.split in ("train", "test", "unlabelled")
        assert not (r.split == "unlabelled" and r.labels)
        assert all(name and "|" not in name for name in r.labels)


# A quote left open mid-file: the reader used to read on through the rows below it and import
# them as one giant row (or, at the end of the file, as one unlabelled row).
OPEN_QUOTE_FILES = [
    pytest.param(
        'text,label\nhi,greet\n"I want a refund,refund\nwhere is my card,card_arrival\nbye,bye\n',
        r"line 3: a quote opened on this line is never closed: the file ends inside it",
        id="open-to-the-end",
    ),
    pytest.param(
        'text,label\nhi,greet\n"I want a refund,refund\nwhere is my card,card_arrival\n'
        '"hello, there",greet\n',
        r"line 3: a quote opened on this line is never closed: the next quote, on line 5, is "
        "followed by more text",
        id="closed-by-a-later-cell",
    ),
    pytest.param(
        "text,label\nhi,greet\nmy card,card_arrival\n"
        '"I want a refund,refund\nwhere is my card,card_arrival\nhe said hi",greet\nbye,bye\n',
        r"line 4: a quote opened on this line is closed only on line 6: the lines between "
        r"read as rows of their own \(such as 'where is my card,card_arrival'\)",
        id="closed-by-a-stray-quote",
    ),
]


@pytest.mark.parametrize(("data", "message"), OPEN_QUOTE_FILES)
def test_a_quote_left_open_is_refused_with_the_line_where_it_opened(data, message):
    with pytest.raises(FormatError, match=message) as info:
        parse_csv(data.encode())
    assert "Nothing was imported" in str(info.value)


def test_a_quoted_text_with_line_breaks_and_commas_still_reads():
    data = (
        'text,label\nhi,greet\n"Dear team,\nI lost my card, please help",lost_card\n'
        '"two\r\nlines",greet\nbye,greet\n'
    )
    rows = parse_csv(data.encode())
    assert [r.text for r in rows] == [
        "hi",
        "Dear team,\nI lost my card, please help",
        "two\r\nlines",
        "bye",
    ]
    assert [r.labels for r in rows] == [("greet",), ("lost_card",), ("greet",), ("greet",)]


# Every character Python or a spreadsheet may take for the end of a line or a record.
BREAKS = ["\r", "\n", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("char", BREAKS, ids=[f"U+{ord(c[0]):04X}" for c in BREAKS])
def test_csv_quotes_every_control_character_and_reads_the_rows_back(char):
    """Issue 45, row 14: a text with a bare carriage return was written unquoted, and the file
    read back as two bad rows. A cell with any control character (or a line or paragraph
    separator) is quoted."""
    rows = [
        Row(f"first{char}second", ("greet",)),
        Row("after", ("bye",), context=f"a{char}b"),
        Row("tab\tinside", ("greet",)),
    ]
    text = write_csv(rows)
    assert f'"first{char}second"' in text and f'"a{char}b"' in text
    assert parse_csv(text.encode("utf-8")) == rows
