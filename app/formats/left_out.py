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

from app.formats.common import AgentSource, FormatError, Row, decode
from app.formats.rasa_entities import spans_of
from app.formats.rasa_kept import read_kept
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
RASA_KEPT = "rasa"  # the kept file's format (AgentSource.format) of a project from a Rasa file
SHOW = 5  # items named in a note


def left_out(
    rows: Iterable[Row],
    descriptions: Mapping[str, str],
    slots: SlotData,
    carries: Carries,
    back: SlotData | None = None,
) -> list[str]:
    """Notes naming what of a project a format has no place for (see the module docstring);
    ``back``: the slot data of the file written, read back, where that is known (a Rasa file
    written into the one the project came from carries what its kept lines write too)."""
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
    templates = sum(
        1
        for n, ts in slots.templates.items()
        for t in ts
        if (n, t) not in kept and (back is None or t not in back.templates.get(n, []))
    )
    if book or templates:
        notes.append(
            f"Left out {book} slot value(s) and {templates} template(s) that no annotated "
            f"utterance carries: {carries.name} have no place for them; {SLOT_BOOK_EXPORT}."
        )
    by_value = [words for values in slots.synonyms.values() for words in values.values() if words]
    if not carries.book and by_value:
        notes.append(
            f"Left out {sum(map(len, by_value))} synonym(s) of {len(by_value)} slot value(s) "
            f"(the other ways a value is written): {carries.name} have no place for them; "
            f"{SLOT_BOOK_EXPORT}."
        )
    return notes


def kept_left_out(
    kept: AgentSource | None, title: str, slots: SlotData, carries: Carries
) -> list[str]:
    """Notes on what the file the project came from holds (``kept``, a ``title``) that the
    project does not model and an export to another format leaves out: a Rasa file's
    ``regex:`` items and the ``synonym:`` maps that name no annotated value, an agent's rest
    (flows, responses, ...)."""
    if kept is None:
        return []
    if kept.format != RASA_KEPT:
        return [
            f"Left out the rest of the {title} the project keeps (what the app does not model: "
            f"flows, responses, entity types and the like): {carries.name} have no place for "
            f"it; an export to a {title} writes it back."
        ]
    try:
        found = read_kept(decode(kept.content))
    except FormatError:
        found = None
    items = found[1] if found is not None else []
    valued = {v for values in slots.synonyms.values() for v in values}
    regexes = [i.name for i in items if i.kind == "regex"]
    maps = [i.name for i in items if i.kind == "synonym" and i.name not in valued]
    notes = []
    for names, what, which in (
        (regexes, "regex item(s)", ""),
        (maps, "synonym map(s)", " that name no annotated value"),
    ):
        if names:
            shown = ", ".join(repr(n) for n in names[:SHOW])
            more = f" and {len(names) - SHOW} more" if len(names) > SHOW else ""
            notes.append(
                f"Left out {len(names)} {what} of the Rasa file the project came from{which} "
                f"({shown}{more}): {carries.name} have no place for them; an export to Rasa "
                "(.yml) writes them back."
            )
    return notes
