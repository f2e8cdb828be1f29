"""The round-trip table of ``docs/formats.md``, measured (issue 74 items 2 and 5): one project that
holds every construct (intents, a description, a test-split row, an unlabelled row, a context,
annotations with roles (one on an out-of-scope phrase), Rasa's inline value and group, a role
given two entity types, a Lex slot reference, slot values no annotation writes, synonyms) is exported to every format and read back;
each cell says what came back: ``yes`` (all of it), ``named`` (the export's notes name what did
not, with its count: ``named, k of n back``), or ``LOST`` (neither: a test fails on it).

``tests/app/formats/test_round_trip_table.py`` checks the table in the docs is this one;
``python -m tests.app.formats.round_trip_table`` writes it there (between its markers).

Example:
    >>> cells = measure("csv")  # doctest: +SKIP
    >>> cells["roles"]  # doctest: +SKIP
    'yes'
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

from app.formats import Row, read_any, write_any
from app.formats.agents import agent_format
from core.slots import EntitySpan, SlotData

DOCS = Path(__file__).resolve().parents[3] / "docs" / "formats.md"
BEGIN = "<!-- round-trip table: python -m tests.app.formats.round_trip_table writes it -->"
END = "<!-- end of the round-trip table -->"

# (column, how the rows of a format are written: a suffix, or an agent format)
FORMATS = {
    "CSV": ".csv",
    "JSONL": ".jsonl",
    "Rasa `.yml`": ".yml",
    "intent `.txt` files (`.zip`)": ".zip",
    "Dialogflow ES": "dialogflow-es",
    "Dialogflow CX": "dialogflow-cx",
    "Dialogflow CX (one file)": "dialogflow-cx-json",
    "Lex V2": "lex-v2",
    "Watson": "watson",
    "LUIS": "luis",
    "CLU": "clu",
}

ROWS = [
    Row("fly from Berlin to Paris", ("book_flight",)),
    Row("fly from TXL to Paris", ("book_flight",)),
    Row("get me to NYC", ("book_flight",)),
    Row("a window seat for Ana", ("book_seat",)),
    Row("I want a {CardType} card", ("order_card",)),
    Row("hello there", ("greet",), "test"),
    Row("yes please", ("confirm",), context="Shall I book it?"),
    Row("what is the weather in Rome", ("out_of_scope",)),
    Row("hm", (), "unlabelled"),
]
DESCRIPTIONS = {"book_flight": "The user wants to fly somewhere", "greet": "", "confirm": ""}
SPANS = {
    "fly from Berlin to Paris": [
        EntitySpan(9, 15, "city", role="from"),
        EntitySpan(19, 24, "city", role="to"),
    ],
    "fly from TXL to Paris": [  # a role given two entity types in one intent
        EntitySpan(9, 12, "iata", role="from"),
        EntitySpan(16, 21, "city", role="to"),
    ],
    "get me to NYC": [EntitySpan(10, 13, "city", value="New York")],
    "a window seat for Ana": [
        EntitySpan(2, 8, "seat", group="1"),
        EntitySpan(18, 21, "name", group="1"),
    ],
    "I want a {CardType} card": [EntitySpan(9, 19, "CardTypes", role="CardType")],
    "what is the weather in Rome": [EntitySpan(23, 27, "city")],  # out of scope, annotated
}
BOOK = {
    "city": ["Berlin", "Paris", "NYC", "Rome", "Oslo"],
    "iata": ["TXL"],
    "seat": ["window"],
    "name": ["Ana"],
    "CardTypes": ["Visa", "Mastercard"],
}
SYNONYMS = {"city": {"Oslo": ["Christiania"]}, "CardTypes": {"Visa": ["visa card"]}}

COLUMNS = [
    "intents, phrases",
    "descriptions",
    "test split",
    "unlabelled rows",
    "contexts",
    "annotations (entity type)",
    "roles",
    "inline values",
    "groups",
    "slot values, synonyms",
    "slot references `{Slot}`",
]
ANNOTATIONS = "annotations (entity type)"
# what is part of an annotation: named with it when the annotation is left out whole
ANNOTATION_PARTS = ("roles", "inline values", "groups")
NAMED = {
    "intents, phrases": r"phrase|utterance",
    "descriptions": r"description",
    "test split": r"test",
    "unlabelled rows": r"unlabelled",
    "contexts": r"context",
    "annotations (entity type)": r"Left out \d+ entity (annotation|label)\(s\)|entity part",
    "roles": r"role",
    "inline values": r"the value of",
    "groups": r"group",
    "slot values, synonyms": r"value\(s\)|synonym",
    "slot references `{Slot}`": r"Left out \d+ entity (annotation|label)\(s\)|role|\{Slot\}",
}


def source() -> tuple[list[Row], dict[str, str], SlotData]:
    slots = SlotData(
        {k: list(v) for k, v in BOOK.items()},
        entities={t: [s.to_dict() for s in spans] for t, spans in SPANS.items()},
        synonyms={k: {v: list(w) for v, w in d.items()} for k, d in SYNONYMS.items()},
    )
    return list(ROWS), dict(DESCRIPTIONS), slots


def _facts(rows: list[Row], descriptions: dict[str, str], slots: SlotData) -> dict[str, set]:
    """What of each column a project holds, as comparable items."""
    spans = {
        (t, e["start"], e["end"], e["entity"], e.get("role"), e.get("value"), e.get("group"))
        for t, found in slots.entities.items()
        for e in found
    }
    values = [s for s in spans if not s[0][s[1] : s[2]].startswith("{")]
    return {
        "intents, phrases": {(r.text, r.labels) for r in rows if r.labels},
        "descriptions": {(n, d) for n, d in descriptions.items() if d},
        "test split": {r.text for r in rows if r.split == "test"},
        "unlabelled rows": {r.text for r in rows if not r.labels},
        "contexts": {(r.text, r.context) for r in rows if r.context},
        "annotations (entity type)": {s[:4] for s in values},
        "roles": {s[:5] for s in values if s[4]},
        "inline values": {(*s[:4], s[5]) for s in values if s[5]},
        "groups": {(*s[:4], s[6]) for s in values if s[6]},
        "slot values, synonyms": {(k, v) for k, vs in slots.book.items() for v in vs}
        | {(k, v, w) for k, d in slots.synonyms.items() for v, ws in d.items() for w in ws},
        "slot references `{Slot}`": {s[:5] for s in spans if s not in values},
    }


def measure(fmt: str) -> dict[str, str]:
    """Each column's cell for a format (see the module docstring)."""
    rows, descriptions, slots = source()
    agent = not fmt.startswith(".")
    suffix = f".{agent_format(fmt).container}" if agent else fmt
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"bot{suffix}"
        options = {"format": fmt} if agent else {}
        notes = write_any(rows, path, descriptions, slots, name="bot", **options)
        back = read_any(path)
    want = _facts(rows, descriptions, slots)
    got = _facts(back.rows, back.descriptions, back.slots)
    cells: dict[str, str] = {}
    typed = got["annotations (entity type)"]
    for column in COLUMNS:
        held = want[column]
        kept = held & got[column]
        missing = held - kept
        if column in ANNOTATION_PARTS and cells[ANNOTATIONS] != "yes":
            missing = {m for m in missing if m[:4] in typed}  # the rest left out whole, named
        if kept == held:
            cells[column] = "yes"
        elif not missing or any(re.search(NAMED[column], n) for n in notes):
            cells[column] = f"named, {len(kept)} of {len(held)} back"
        else:
            cells[column] = f"LOST, {len(kept)} of {len(held)} back"
    return cells


def table() -> str:
    """The markdown table, a row per format."""
    lines = [
        "| format | " + " | ".join(COLUMNS) + " |",
        "| --- |" + " --- |" * len(COLUMNS),
    ]
    for title, fmt in FORMATS.items():
        cells = measure(fmt)
        lines.append(f"| {title} | " + " | ".join(cells[c] for c in COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def in_docs(text: str) -> str:
    """The round-trip table as ``docs/formats.md`` holds it (between its markers)."""
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[start:end].strip("\n") + "\n"


def write(path: Path = DOCS) -> None:
    text = path.read_text(encoding="utf-8")
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    path.write_text(f"{text[:start]}\n{table()}{text[end:]}", encoding="utf-8")


if __name__ == "__main__":
    write()
    sys.stdout.write(table())
