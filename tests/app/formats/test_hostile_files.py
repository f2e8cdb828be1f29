"""Hostile import files (issue 13): a YAML merge-key bomb, 100k nested brackets, aliases that
expand a small file, spreadsheet formulas. Each is refused with line-numbered problems, quickly,
or (formulas) written so that no spreadsheet runs them and read back exactly."""

from __future__ import annotations

import csv
import io
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.formats import (
    FormatError,
    Row,
    from_spreadsheet_safe,
    parse_csv,
    parse_jsonl,
    parse_rasa_yaml,
    read_any,
    spreadsheet_safe,
    write_csv,
    write_jsonl,
)
from tests.conftest import TEST_DATA
from tests.samples import merge_bomb


def laughs(depth: int) -> bytes:
    """Billion laughs without merge keys: each level is a list of ten aliases of the one below."""
    lines = ['a0: &a0 "lol"']
    for d in range(1, depth + 1):
        lines.append(f"a{d}: &a{d} [{', '.join(f'*a{d - 1}' for _ in range(10))}]")
    lines += ["nlu:", "- intent: greet", "  examples:", f"  - *a{depth}"]
    return ("\n".join(lines) + "\n").encode()


def _refused(data: bytes, suffix: str) -> tuple[FormatError, float]:
    start = time.perf_counter()
    with pytest.raises(FormatError) as info:
        read_any(data, suffix=suffix)
    return info.value, time.perf_counter() - start


@pytest.mark.parametrize("depth", [8, 9])
def test_a_yaml_merge_key_bomb_is_refused_in_under_two_seconds(depth):
    err, seconds = _refused(merge_bomb(depth), ".yml")
    assert seconds < 10  # the expansion took minutes; a bounded refusal is the point
    assert err.problems == [(2, "merge keys ('<<') are not supported: write the keys out")]
    assert str(err).endswith("Nothing was imported.")


def test_aliases_that_expand_a_small_file_past_the_budget_are_refused():
    err, seconds = _refused(laughs(9), ".yml")
    assert seconds < 10  # the expansion took minutes; a bounded refusal is the point
    (line, message), *_ = err.problems
    assert "aliases expand the file past 1,001,172 nodes" in message
    assert line > 1


def test_a_few_aliases_are_fine():
    doc = b'a: &t "hello there"\nnlu:\n- intent: greet\n  examples:\n  - text: *t\n'
    assert parse_rasa_yaml(doc.replace(b"a:", b"version:")).rows == [Row("hello there", ("greet",))]


def test_a_recursive_alias_is_refused():
    with pytest.raises(FormatError, match="refers to a node that holds it"):
        parse_rasa_yaml(b"nlu: &n\n- intent: greet\n  examples: *n\n")


@pytest.mark.parametrize(
    ("data", "suffix", "line"),
    [
        (b"[" * 100_000 + b"]" * 100_000, ".yml", 1),
        (b"nlu:\n- intent: greet\n  examples:\n  - " + b"[" * 100_000 + b"\n", ".yml", 4),
        (b'{"text": "a", "label": "b"}\n' + b"[" * 100_000 + b"\n", ".jsonl", 2),
        (b'{"text": "a", "label": "b", "x": ' + b"{" * 50_000 + b"\n", ".jsonl", 1),
    ],
    ids=["yaml-root", "yaml-example", "jsonl-list", "jsonl-object"],
)
def test_deep_nesting_is_a_line_numbered_problem_not_a_recursion_error(data, suffix, line):
    err, seconds = _refused(data, suffix)
    assert seconds < 10  # the expansion took minutes; a bounded refusal is the point
    assert err.problems[0] == (line, "nested deeper than 20 levels")


def test_brackets_inside_json_strings_are_not_nesting():
    text = "[" * 50 + "deep]" + "]" * 49
    assert parse_jsonl(f'{{"text": "{text}", "label": "b"}}\n'.encode()) == [Row(text, ("b",))]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b'{"text": "a", "label": "b", "split": [[["x"]]]}', "split must be a string"),
        (b'{"text": "a", "label": "b", "context": {"a": 1}}', "context must be a string"),
        (b'{"text": "a", "labels": {"b": 1}}', "labels must be strings"),
    ],
)
def test_jsonl_values_of_the_wrong_type_are_problems(line, message):
    with pytest.raises(FormatError) as info:
        parse_jsonl(line + b"\n")
    assert info.value.problems == [(1, message)]


def test_the_rasa_example_file_still_imports():
    parsed = read_any(TEST_DATA / "rasa_nlu.yml")
    assert len(parsed.rows) > 5


FORMULAS = ['=HYPERLINK("http://evil","click")', "+cmd|' /C calc'!A0", "@SUM(1+1)", "-2+3"]


def test_csv_export_neutralises_formulas_and_reads_them_back_exactly():
    rows = [Row(t, ("=evil",)) for t in FORMULAS] + [Row("'=quoted already", ("ok",))]
    written = write_csv(rows)
    cells = list(csv.reader(io.StringIO(written)))[1:]
    assert [c[0] for c in cells] == ["'" + t for t in FORMULAS] + ["''=quoted already"]
    assert {c[1] for c in cells} == {"'=evil", "ok"}
    assert not [c for row in cells for c in row if c[:1] in ("=", "+", "-", "@", "\t", "\r")]
    assert parse_csv(written.encode()) == rows


def test_jsonl_export_is_never_altered():
    assert write_jsonl([Row("-2+3", ("=x",))]).startswith('{"text": "-2+3", "labels": ["=x"]')
    rows = [Row(t, ("x",)) for t in FORMULAS]
    assert parse_jsonl(write_jsonl(rows).encode()) == rows


def test_a_plain_leading_quote_is_kept_on_import():
    assert parse_csv(b"text,label\n'tis the season,holiday\n")[0].text == "'tis the season"


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("'=+-@\t\rab "), max_size=8))
def test_the_spreadsheet_quote_round_trips_any_cell(cell):
    safe = spreadsheet_safe(cell)
    assert from_spreadsheet_safe(safe) == cell
    assert safe[:1] not in ("=", "+", "-", "@", "\t", "\r")


def test_a_csv_header_with_100000_columns_is_refused_before_its_rows_are_read():
    """Issue 27 row 6: 100,000 columns and 1,000 rows (0.7 MB) took 24 s of CPU to read."""
    n = 100_000
    header = "text,label," + ",".join(f"c{k}" for k in range(n - 2))
    data = ("\n".join([header] + [f"hi there {k},greet" for k in range(1_000)]) + "\n").encode()
    start = time.perf_counter()
    with pytest.raises(FormatError, match="100,000 columns; the limit is 64"):
        read_any(data, suffix=".csv")
    assert time.perf_counter() - start < 2.0
    ok = "text,label," + ",".join(f"c{k}" for k in range(62)) + "\nhi,greet\n"
    assert [r.text for r in read_any(ok.encode(), suffix=".csv").rows] == ["hi"]


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("!!python/object/apply:os.system ['echo pwned']", "!!python/object/apply:os.system"),
        ("!!python/name:os.system greet", "!!python/name:os.system"),
        ("!custom greet", "!custom"),
        ("[greet, bye]", "must be text"),
        ("{a: b}", "must be text"),
    ],
)
def test_a_tagged_or_non_text_intent_name_in_rasa_yaml_is_refused_with_its_line(value, says):
    """Issue 27 row 9: ``intent: !!python/object/apply:os.system [...]`` ran nothing but
    imported an intent named ``?``."""
    doc = f"nlu:\n- intent: greet\n  examples: |\n    - hi\n- intent: {value}\n  examples: |\n    - x\n"
    with pytest.raises(FormatError) as err:
        read_any(doc.encode(), suffix=".yml")
    assert any(says in msg and ln == 5 for ln, msg in err.value.problems), err.value.problems


def test_a_tag_on_an_example_is_refused_too_and_core_tags_are_fine():
    doc = "nlu:\n- intent: greet\n  examples:\n  - !!python/name:os.system hi\n"
    with pytest.raises(FormatError, match=r"python/name:os\.system"):
        read_any(doc.encode(), suffix=".yml")
    ok = "nlu:\n- intent: !!str 123\n  examples:\n  - !!str hello\n"
    assert [(r.text, r.labels) for r in read_any(ok.encode(), suffix=".yml").rows] == [
        ("hello", ("123",))
    ]
