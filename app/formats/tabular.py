"""CSV and JSONL: one utterance per row or line.

Accepted columns (CSV) or keys (JSONL): ``text`` plus ``label`` (one intent) or ``labels``
(``|``-separated in CSV, a list or ``|``-separated in JSONL; empty = no intent), optional
``split`` (train / test / unlabelled; default: train when labelled, else unlabelled) and
``context`` (the turn before the utterance, e.g. the bot's question), and ``description``: the
description of the row's one intent (the same text on every row of it, or on any one row; two
different ones are a problem). A row with no text but one intent and a description declares
that intent with its description (it may have no examples yet: cold start). Written files carry
``text``, ``labels`` and ``split``, ``context`` when a row has one (a CSV gets the column when
any row has one) and ``description`` when an intent has one (on every single-intent row of it;
an intent without such a row gets a declaration row), so export -> import keeps both.

A CSV cell that a spreadsheet would run as a formula (one starting with ``=``, ``+``, ``-``,
``@``, a tab or a carriage return: OWASP's list) is written with a ``'`` in front
(:func:`spreadsheet_safe`), and reading a CSV takes that one ``'`` off again
(:func:`from_spreadsheet_safe`), so CSV export -> import gives back exactly the text exported.
JSONL is written as is. A JSONL line may nest at most :data:`~app.formats.common.MAX_NESTING`
levels deep.

Example:
    >>> parse_csv(b"text,label\\nhi there,greet\\n")
    [NewUtterance(text='hi there', labels=('greet',), split='train', context='')]
    >>> write_jsonl([Row("hi", ("greet",))])
    '{"text": "hi", "labels": ["greet"], "split": "train"}\\n'
    >>> write_csv([Row("=1+1", ("math",))])
    "text,labels,split\\n'=1+1,math,train\\n"
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable

from app.formats.common import (
    MAX_COLUMNS,
    MAX_NESTING,
    MAX_ROWS,
    FormatError,
    ParsedFile,
    Row,
    add_description,
    check_context,
    check_intent,
    check_text,
    decode,
    finish,
    json_depth_over,
)
from app.formats.csv_quotes import line_breaks, open_quote, row_inside
from storage.tables import SPLITS
from storage.utterances import is_blank

# A cell a spreadsheet would evaluate, after any quotes already put in front of it.
_FORMULA = re.compile(r"'*[=+\-@\t\r]")
_QUOTED_FORMULA = re.compile(r"'+[=+\-@\t\r]")


def spreadsheet_safe(cell: str) -> str:
    """A CSV cell that no spreadsheet runs as a formula: ``'`` in front of one that starts with
    ``= + - @``, a tab or CR (or with quotes and then one of those, so that reading it back with
    :func:`from_spreadsheet_safe` gives exactly ``cell``).

    Example:
        >>> spreadsheet_safe("=SUM(A1:A9)"), spreadsheet_safe("hi -2")
        ("'=SUM(A1:A9)", 'hi -2')
    """
    return "'" + cell if _FORMULA.match(cell) else cell


def from_spreadsheet_safe(cell: str) -> str:
    """A cell as it was before :func:`spreadsheet_safe`.

    Example:
        >>> from_spreadsheet_safe(spreadsheet_safe("'@x")), from_spreadsheet_safe("'quoted")
        ("'@x", "'quoted")
    """
    return cell[1:] if _QUOTED_FORMULA.match(cell) else cell


def _split_labels(raw: object) -> list[str]:
    if raw is None:
        return []
    if isinstance(raw, list):
        return [str(x).strip() for x in raw]
    text = str(raw).strip()
    return [p.strip() for p in text.split("|")] if text else []


def _check_row(
    line: int, text: object, raw_labels: object, split: object, context: object
) -> tuple[Row | None, list[tuple[int, str]]]:
    """The row of one record, or its problems."""
    if not isinstance(text, str) or is_blank(text):
        return None, [(line, "empty text")]
    clean = text.strip()
    problems: list[tuple[int, str]] = []
    if (msg := check_text(clean)) is not None:
        problems.append((line, msg))
    labels = _split_labels(raw_labels)
    for msg in dict.fromkeys(m for name in labels if (m := check_intent(name))):
        problems.append((line, f"{msg} in labels {raw_labels!r}"))
    if len(set(labels)) != len(labels):
        problems.append((line, f"the same intent twice in labels {raw_labels!r}"))
    split_value = (
        str(split).strip() if split not in (None, "") else ("train" if labels else "unlabelled")
    )
    if split_value not in SPLITS:
        problems.append((line, f"unknown split {split_value!r} (use {', '.join(SPLITS)})"))
    if split_value == "unlabelled" and labels:
        problems.append((line, "an unlabelled row cannot carry labels"))
    ctx, ctx_problem = check_context(context)
    if ctx_problem is not None:
        problems.append((line, ctx_problem))
    if problems:
        return None, problems
    return Row(clean, tuple(sorted(labels)), split_value, ctx), []


def _declares(text: object, description: object) -> bool:
    """Whether a record is an intent declaration: no text, a description."""
    blank = text is None or (isinstance(text, str) and is_blank(text))
    return blank and description not in (None, "") and not is_blank(str(description))


def _declare(
    line: int,
    raw_labels: object,
    description: object,
    descriptions: dict[str, tuple[int, str]],
    problems: list[tuple[int, str]],
) -> None:
    labels = _split_labels(raw_labels)
    if (msg := next((m for n in labels if (m := check_intent(n))), None)) is not None:
        problems.append((line, f"{msg} in labels {raw_labels!r}"))
        return
    add_description(descriptions, problems, line, labels, description)


def _parsed(
    found: list[tuple[int, str, Row]],
    problems: list[tuple[int, str]],
    descriptions: dict[str, tuple[int, str]],
) -> ParsedFile:
    rows = finish(found, problems, declared=len(descriptions))
    return ParsedFile(rows, descriptions={n: d for n, (_, d) in descriptions.items()})


def parse_csv(data: bytes) -> list[Row]:
    """Read a CSV file (header row first) into rows (see :func:`read_csv` for descriptions)."""
    return read_csv(data).rows


def parse_jsonl(data: bytes) -> list[Row]:
    """Read a JSONL file into rows (see :func:`read_jsonl` for descriptions)."""
    return read_jsonl(data).rows


def read_csv(data: bytes) -> ParsedFile:
    """Read a CSV file (header row first) into rows and intent descriptions.

    A quote left open mid-file is refused with the line where it opened (the rules of
    :mod:`app.formats.csv_quotes`); a quoted cell with line breaks is fine.

    Raises:
        FormatError: bad UTF-8, missing columns, malformed lines, a quote left open, bad rows,
            duplicates.
    """
    text = decode(data)
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
        header = [h.strip() for h in (reader.fieldnames or [])]
    except csv.Error as exc:
        raise FormatError(f"Not a readable CSV file: {exc}") from exc
    if len(header) > MAX_COLUMNS:
        raise FormatError(
            f"The header has {len(header):,} columns; the limit is {MAX_COLUMNS} (a file needs "
            "'text', 'label' or 'labels', and optionally 'split', 'context', 'description')."
        )
    reader.fieldnames = header
    if "text" not in header or not ({"label", "labels"} & set(header)):
        raise FormatError(
            f"Missing columns: need 'text' and 'label' or 'labels'; found {', '.join(header) or 'none'}."
        )
    label_col = "labels" if "labels" in header else "label"
    found: list[tuple[int, str, Row]] = []
    problems: list[tuple[int, str]] = []
    descriptions: dict[str, tuple[int, str]] = {}
    spanning: list[tuple[int, int, list[str]]] = []  # (first line, last line, cells) of a record
    end = reader.line_num
    try:
        for raw_record in reader:
            cells = [c for v in raw_record.values() for c in (v if isinstance(v, list) else [v])]
            breaks = sum(line_breaks(c) for c in cells if c)
            end, line = reader.line_num, reader.line_num - breaks
            if breaks:
                spanning.append((line, end, [c for c in cells if c and line_breaks(c)]))
            if None in raw_record:
                problems.append((line, "more cells than columns"))
                continue
            record = {
                k: v if v is None else from_spreadsheet_safe(v) for k, v in raw_record.items()
            }
            if _declares(record.get("text"), record.get("description")):
                _declare(line, record.get(label_col), record["description"], descriptions, problems)
                continue
            row, errs = _check_row(
                line,
                record.get("text"),
                record.get(label_col),
                record.get("split"),
                record.get("context"),
            )
            problems.extend(errs)
            if row is not None:
                found.append((line, "", row))
                add_description(descriptions, problems, line, row.labels, record.get("description"))
            if len(found) > MAX_ROWS:
                break
    except csv.Error as exc:
        lines = text.splitlines(keepends=True)
        start = next((n for n in range(end + 1, len(lines) + 1) if lines[n - 1].strip("\r\n")), end)
        opened, closed = open_quote(lines, start)
        if closed:
            where = f"the next quote, on line {closed}, is followed by more text"
        elif "end of data" in str(exc):
            where = "the file ends inside it"
        else:
            where = str(exc)
        problems.append((opened, f"a quote opened on this line is never closed: {where}"))
    problems.extend(_swallowed(spanning, found, header.index(label_col), len(header)))
    return _parsed(found, problems, descriptions)


def _swallowed(
    spanning: list[tuple[int, int, list[str]]],
    found: list[tuple[int, str, Row]],
    label_at: int,
    width: int,
) -> list[tuple[int, str]]:
    """A multi-line record whose lines read as rows of the file: a quote left open that swallowed
    them (rule 3 of :mod:`app.formats.csv_quotes`)."""
    if not spanning:
        return []
    inside = {first for first, _, _ in spanning}
    intents = {name for line, _, row in found if line not in inside for name in row.labels}
    out = []
    for first, last, cells in spanning:
        piece = next(
            (
                p
                for c in cells
                if (p := row_inside(c, width=width, label_at=label_at, intents=intents))
            ),
            None,
        )
        if piece is not None:
            out.append(
                (
                    first,
                    f"a quote opened on this line is closed only on line {last}: the lines "
                    f"between read as rows of their own (such as {piece!r})",
                )
            )
    return out


def read_jsonl(data: bytes) -> ParsedFile:
    """Read a JSONL file (one JSON object per line; blank lines skipped) into rows and intent
    descriptions.

    Raises:
        FormatError: bad UTF-8, lines that are not JSON objects, bad rows, duplicates.
    """
    text = decode(data)
    found: list[tuple[int, str, Row]] = []
    problems: list[tuple[int, str]] = []
    descriptions: dict[str, tuple[int, str]] = {}
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if json_depth_over(line):
            problems.append((line_no, f"nested deeper than {MAX_NESTING} levels"))
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append((line_no, f"not valid JSON: {exc.msg}"))
            continue
        except RecursionError:  # a second fence behind the depth check
            problems.append((line_no, f"nested deeper than {MAX_NESTING} levels"))
            continue
        if not isinstance(obj, dict):
            problems.append((line_no, "each line must be a JSON object"))
            continue
        if "text" not in obj or not ({"label", "labels"} & set(obj)):
            problems.append((line_no, "needs 'text' and 'label' or 'labels'"))
            continue
        labels = obj.get("labels", obj.get("label"))
        if not (
            labels is None
            or isinstance(labels, str)
            or (isinstance(labels, list) and all(isinstance(x, str) for x in labels))
        ):
            problems.append((line_no, "labels must be strings"))
            continue
        keys = ("split", "context", "description")
        if odd := [k for k in keys if not isinstance(obj.get(k, ""), str | None)]:
            problems.append((line_no, f"{odd[0]} must be a string"))
            continue
        if _declares(obj.get("text"), obj.get("description")):
            _declare(line_no, labels, obj["description"], descriptions, problems)
            continue
        row, errs = _check_row(
            line_no, obj.get("text"), labels, obj.get("split"), obj.get("context")
        )
        problems.extend(errs)
        if row is not None:
            found.append((line_no, "", row))
            add_description(descriptions, problems, line_no, row.labels, obj.get("description"))
    return _parsed(found, problems, descriptions)


def _undescribed(rows: list[Row], descriptions: dict[str, str]) -> list[str]:
    """Described intents that no single-intent row carries (they get a declaration row)."""
    carried = {r.labels[0] for r in rows if len(r.labels) == 1}
    return [name for name in sorted(descriptions) if descriptions[name] and name not in carried]


def _description(row: Row, descriptions: dict[str, str]) -> str:
    return descriptions.get(row.labels[0], "") if len(row.labels) == 1 else ""


def write_csv(rows: Iterable[Row], descriptions: dict[str, str] | None = None) -> str:
    """Rows as CSV text: ``text,labels,split`` (labels ``|``-separated), a ``context`` column
    when any row has a context and, with intent ``descriptions``, a ``description`` column; each
    cell :func:`spreadsheet_safe`."""
    rows = list(rows)
    described = {n: d for n, d in (descriptions or {}).items() if d}
    with_context = any(r.context for r in rows)
    extra = [*(["context"] if with_context else []), *(["description"] if described else [])]
    buf = io.StringIO()
    buf.write(csv_line(["text", "labels", "split", *extra]))
    for r in rows:
        cells = [r.text, "|".join(r.labels), r.split]
        if with_context:
            cells.append(r.context)
        if described:
            cells.append(_description(r, described))
        buf.write(csv_line([spreadsheet_safe(c) for c in cells]))
    for name in _undescribed(rows, described):
        cells = ["", name, "", *([""] if with_context else []), described[name]]
        buf.write(csv_line([spreadsheet_safe(c) for c in cells]))
    return buf.getvalue()


# A cell that needs quotes: a comma or quote, or any control character or line or paragraph
# separator (Python's csv writer leaves a bare CR unquoted when lines end in LF, and a reader
# or a spreadsheet may take any of these for the end of a record).
_QUOTE = re.compile(r'[",\x00-\x1f\x7f-\x9f\u2028\u2029]')


def csv_line(cells: Iterable[str]) -> str:
    """One CSV record ending in ``\\n``: a cell is quoted (its quotes doubled) when it holds a
    comma, a quote or a control character.

    Example:
        >>> csv_line(["a\\rb", "plain", "x,y"])
        '"a\\rb",plain,"x,y"\\n'
    """
    out = []
    for cell in cells:
        out.append('"' + cell.replace('"', '""') + '"' if _QUOTE.search(cell) else cell)
    return ",".join(out) + "\n"


def write_jsonl(rows: Iterable[Row], descriptions: dict[str, str] | None = None) -> str:
    """Rows as JSONL text: one ``{"text", "labels", "split"}`` object per line, with
    ``"context"`` when the row has one and ``description`` on the rows of a described intent (a
    declaration line for a described intent without such a row)."""
    rows = list(rows)
    described = {n: d for n, d in (descriptions or {}).items() if d}
    lines = []
    for r in rows:
        obj: dict[str, object] = {"text": r.text, "labels": list(r.labels), "split": r.split}
        if r.context:
            obj["context"] = r.context
        if text := _description(r, described):
            obj["description"] = text
        lines.append(json.dumps(obj, ensure_ascii=False) + "\n")
    for name in _undescribed(rows, described):
        obj = {"text": "", "labels": [name], "description": described[name]}
        lines.append(json.dumps(obj, ensure_ascii=False) + "\n")
    return "".join(lines)
