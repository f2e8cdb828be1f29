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
    with pytest.raises(FormatError, match="contains '\\|'"):
        parse_jsonl(b'{"text": "a", "labels": ["x|y"]}\n')


@pytest.mark.parametrize(("write", "read"), [(write_csv, parse_csv), (write_jsonl, parse_jsonl)])
def test_written_rows_read_back(write, read):
    rows = [Row('a, "quoted"', ("x", "y")), Row("b", ("x",), "test"), Row("c", (), "unlabelled")]
    assert read(write(rows).encode()) == rows


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
