"""CSV and JSONL written (read by :mod:`app.formats.tabular`): one utterance per row or line, with
its intents, split, context, its intent's description and its entity annotations, so that an
export read back gives the same project.

Example:
    >>> write_jsonl([Row("hi", ("greet",))])
    '{"text": "hi", "labels": ["greet"], "split": "train"}\\n'
    >>> write_csv([Row("=1+1", ("math",))])
    "text,labels,split\\n'=1+1,math,train\\n"
    >>> write_csv([Row("to Rome", ("fly",))], entities={"to Rome": [{"start": 3, "end": 7, "entity": "city"}]})
    'text,labels,split,entities\\nto Rome,fly,train,"[{""start"": 3, ""end"": 7, ""entity"": ""city""}]"\\n'
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from app.formats.common import Row
from app.formats.tabular import spreadsheet_safe

Entities = Mapping[str, Sequence[Mapping[str, Any]]]  # text -> its spans (EntitySpan.to_dict)


def _undescribed(rows: list[Row], descriptions: dict[str, str]) -> list[str]:
    """Described intents that no single-intent row carries (they get a declaration row)."""
    carried = {r.labels[0] for r in rows if len(r.labels) == 1}
    return [name for name in sorted(descriptions) if descriptions[name] and name not in carried]


def _description(row: Row, descriptions: dict[str, str]) -> str:
    return descriptions.get(row.labels[0], "") if len(row.labels) == 1 else ""


def _spans(entities: Entities | None, text: str) -> str:
    """A row's entity annotations as the JSON of its ``entities`` cell (``""``: none)."""
    spans = (entities or {}).get(text)
    return json.dumps([dict(e) for e in spans], ensure_ascii=False) if spans else ""


def write_csv(
    rows: Iterable[Row],
    descriptions: dict[str, str] | None = None,
    *,
    entities: Entities | None = None,
) -> str:
    """Rows as CSV text: ``text,labels,split`` (labels ``|``-separated), a ``context`` column
    when any row has a context, with intent ``descriptions`` a ``description`` column and with
    ``entities`` (text -> its spans) an ``entities`` column (JSON) when a row has some; each
    cell :func:`spreadsheet_safe`."""
    rows = list(rows)
    described = {n: d for n, d in (descriptions or {}).items() if d}
    with_context = any(r.context for r in rows)
    annotated = any(_spans(entities, r.text) for r in rows)
    extra = [
        *(["context"] if with_context else []),
        *(["description"] if described else []),
        *(["entities"] if annotated else []),
    ]
    buf = io.StringIO()
    buf.write(csv_line(["text", "labels", "split", *extra]))
    for r in rows:
        cells = [r.text, "|".join(r.labels), r.split]
        if with_context:
            cells.append(r.context)
        if described:
            cells.append(_description(r, described))
        if annotated:
            cells.append(_spans(entities, r.text))
        buf.write(csv_line([spreadsheet_safe(c) for c in cells]))
    for name in _undescribed(rows, described):
        cells = ["", name, "", *([""] if with_context else []), described[name]]
        cells += [""] if annotated else []
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


def write_jsonl(
    rows: Iterable[Row],
    descriptions: dict[str, str] | None = None,
    *,
    entities: Entities | None = None,
) -> str:
    """Rows as JSONL text: one ``{"text", "labels", "split"}`` object per line, with
    ``"context"`` when the row has one, ``description`` on the rows of a described intent (a
    declaration line for a described intent without such a row) and ``entities`` (its spans,
    from ``entities``: text -> spans) on an annotated row."""
    rows = list(rows)
    described = {n: d for n, d in (descriptions or {}).items() if d}
    lines = []
    for r in rows:
        obj: dict[str, object] = {"text": r.text, "labels": list(r.labels), "split": r.split}
        if r.context:
            obj["context"] = r.context
        if text := _description(r, described):
            obj["description"] = text
        if spans := (entities or {}).get(r.text):
            obj["entities"] = [dict(e) for e in spans]
        lines.append(_json_line(obj))
    for name in _undescribed(rows, described):
        obj = {"text": "", "labels": [name], "description": described[name]}
        lines.append(_json_line(obj))
    return "".join(lines)


# Characters JSON leaves raw that many line readers (Python's str.splitlines among them) take for
# a line end: escaped, so a JSONL file has one object per line whatever the texts hold.
_LINE_ENDS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _json_line(obj: dict[str, object]) -> str:
    return json.dumps(obj, ensure_ascii=False).translate(_LINE_ENDS) + "\n"
