"""What an export cannot write, said: each format carries what it has a place for
(:class:`Carries`), and :func:`left_out` names the rest of the project in the export's notes,
so that nothing is dropped without a word.

| format | unlabelled rows | context | descriptions | entity annotations | slot book |
|---|---|---|---|---|---|
| CSV, JSONL | yes | yes | yes | yes (``entities``) | the values annotations bring |
| Rasa NLU YAML | no | yes (example ``metadata``) | yes | yes (markup) | yes (``lookup:``, ``synonym:``) |
| intent ``.txt`` files | no | no | no | no | no |
| platform agents | no (the plan says so) | no | each format says | each format says | each format says |

No file but the slot book file (``slots.yml``) holds a template on its own: a format that
carries annotations brings back the templates of its annotated examples, and the notes name the
others and point to the slot book export.

Example:
    >>> rows = [Row("yes please", ("confirm",), context="Shall I cancel it?"), Row("hm", ())]
    >>> left_out(rows, {}, SlotData(), INTENT_FILES)
    ['Left out 1 unlabelled utterance(s): intent .txt files hold labelled ones only.', 'Left out the context (the turn before) of 1 utterance(s): intent .txt files have no place for it.']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from app.formats.common import Row
from app.formats.rasa_entities import spans_of
from core.slots import SlotData, template_of


@dataclass(frozen=True)
class Carries:
    """What a format writes (``name``: the format in a note, as the subject of "have")."""

    name: str
    unlabelled: bool = False
    context: bool = False
    descriptions: bool = False
    entities: bool = False
    book: bool = False


TABULAR = Carries("CSV and JSONL files", True, True, True, True)
RASA = Carries("Rasa NLU files", False, True, True, True, True)
INTENT_FILES = Carries("intent .txt files")
# An agent export says what it leaves out itself: rows and descriptions (its plan), entity
# annotations and entity types (each format, item by item: app.formats.agents.entities).
AGENTS = Carries("platform agents", unlabelled=True, descriptions=True, entities=True, book=True)

SLOT_BOOK_EXPORT = "export the slot book (slots.yml) to keep them"
SHOW = 5  # items named in a note


def left_out(
    rows: Iterable[Row], descriptions: Mapping[str, str], slots: SlotData, carries: Carries
) -> list[str]:
    """Notes naming what of a project a format has no place for (see the module docstring)."""
    rows = list(rows)
    written = rows if carries.unlabelled else [r for r in rows if r.labels]
    notes = []
    if n := len(rows) - len(written):
        notes.append(
            f"Left out {n} unlabelled utterance(s): {carries.name} hold labelled ones only."
        )
    if not carries.context and (n := sum(1 for r in written if r.context)):
        notes.append(
            f"Left out the context (the turn before) of {n} utterance(s): {carries.name} have "
            "no place for it."
        )
    if not carries.descriptions and (n := sum(1 for d in descriptions.values() if d)):
        notes.append(f"Left out {n} intent description(s): {carries.name} have no place for them.")
    annotated = [(r, spans) for r in written if (spans := spans_of(slots.entities, r.text))]
    if not carries.entities and annotated:
        n = sum(len(spans) for _, spans in annotated)
        shown = ", ".join(
            f"{r.text[e.start : e.end]!r} ({e.entity} in {r.text[:40]!r})"
            for r, spans in annotated[:SHOW]
            for e in spans[:1]
        )
        more = f" and {len(annotated) - SHOW} more" if len(annotated) > SHOW else ""
        notes.append(
            f"Left out {n} entity annotation(s) of {len(annotated)} utterance(s): "
            f"{carries.name} have no place for them: {shown}{more}."
        )
    brought = annotated if carries.entities else []
    values = {(e.entity, r.text[e.start : e.end].strip()) for r, spans in brought for e in spans}
    kept = {(n, template_of(r.text, spans)) for r, spans in brought for n in r.labels}
    book = (
        0
        if carries.book
        else sum(1 for s, vs in slots.book.items() for v in vs if (s, v) not in values)
    )
    templates = sum(1 for n, ts in slots.templates.items() for t in ts if (n, t) not in kept)
    if book or templates:
        notes.append(
            f"Left out {book} slot value(s) and {templates} template(s) that no annotated "
            f"utterance carries: {carries.name} have no place for them; {SLOT_BOOK_EXPORT}."
        )
    return notes
