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
an intent without such a row gets a declaration row), so export -> import keeps both
(:mod:`app.formats.tabular_write`). ``entities``: the row's entity annotations, a JSON list of
``{"start", "end", "entity"}`` (``value``, ``role``, ``group`` optional; offsets in characters of
the text), as a Rasa file's ``[Berlin](city)``: they feed the slot book and the intent's templates.

A CSV cell that a spreadsheet would run as a formula (one starting with ``=``, ``+``, ``-``,
``@``, a tab or a carriage return: OWASP's list) is written with a ``'`` in front
(:func:`spreadsheet_safe`), and reading a CSV takes that one ``'`` off again
(:func:`from_spreadsheet_safe`), so CSV export -> import gives back exactly the text exported.
JSONL is written as is. A JSONL line may nest at most :data:`~app.formats.common.MAX_NESTING`
levels deep.

Example:
    >>> parse_csv(b"text,label\\nhi there,greet\\n")
    [NewUtterance(text='hi there', labels=('greet',), split='train', context='')]
    >>> doc = b'{"text": "fly to Rome", "labels": ["fly"], "entities": [{"start": 7, "end": 11, "entity": "city"}]}'
    >>> read_jsonl(doc).slots.templates
    {'fly': ['fly to {city}']}
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import replace

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
from app.formats.csv_quotes import file_lines, line_breaks, open_quote, row_inside
from app.formats.rasa_entities import add_example, read_spans
from core.slots import SlotData, SlotError
from storage.tables import SPLITS
from storage.texts import nfc
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
    serving_state, ctx_problem = check_context(context)
    if ctx_problem is not None:
        problems.append((line, ctx_problem))
    if problems:
        return None, problems
    return Row(clean, tuple(sorted(labels)), split_value, serving_state), []


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


def _annotate(
    line: int,
    raw_text: str,
    row: Row,
    value: object,
    slots: SlotData,
    problems: list[tuple[int, str]],
) -> None:
    """Record a row's entity annotations (``value``: its ``entities`` cell or key, offsets in
    ``raw_text`` as the file holds it) in ``slots``, or the problem with them."""
    if value in (None, "", []):
        return
    lead = len(raw_text) - len(raw_text.lstrip())
    try:
        spans = [
            replace(e, start=e.start - lead, end=e.end - lead) for e in read_spans(value, raw_text)
        ]
    except SlotError as exc:
        problems.append((line, str(exc)))
        return
    if any(e.start < 0 or e.end > len(row.text) for e in spans):
        problems.append((line, "an entity span covers the spaces around the text"))
    elif nfc(row.text) != row.text:
        problems.append((line, "entity offsets need the text in Unicode NFC form"))
    else:
        add_example(slots, row.text, spans, row.labels)


def _parsed(
    found: list[tuple[int, str, Row]],
    problems: list[tuple[int, str]],
    descriptions: dict[str, tuple[int, str]],
    slots: SlotData,
) -> ParsedFile:
    rows = finish(found, problems, declared=len(descriptions))
    n = sum(len(spans) for spans in slots.entities.values())
    notes = (
        [
            f"Kept {n} entity annotation(s) of {len(slots.entities)} utterance(s): they feed "
            "the slot book and the intents' templates."
        ]
        if n
        else []
    )
    described = {name: d for name, (_, d) in descriptions.items()}
    return ParsedFile(rows, notes, descriptions=described, slots=slots)


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
    slots = SlotData()
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
                _annotate(line, str(record["text"]), row, record.get("entities"), slots, problems)
            if len(found) > MAX_ROWS:
                break
    except csv.Error as exc:
        lines = file_lines(text, keepends=True)
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
    return _parsed(found, problems, descriptions, slots)


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
    slots = SlotData()
    for line_no, line in enumerate(file_lines(text), start=1):
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
            _annotate(line_no, obj["text"], row, obj.get("entities"), slots, problems)
    return _parsed(found, problems, descriptions, slots)
