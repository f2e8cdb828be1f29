"""Entity annotations on the platforms: what every agent format shares to read a phrase's entity
spans and write them (issue 66 item 1: a project's annotations were dropped by every platform
export, though each has a place for them).

A span's ``entity`` is the entity *type* (Rasa's entity, Dialogflow's ``@type``, LUIS's and
CLU's entity, Watson's entity, Lex's slot type); its ``role`` the name a phrase gives it where
that differs (Dialogflow's parameter, Lex's slot, Rasa's and LUIS's role). Offsets here are in
characters (code points); LUIS, CLU and Watson count UTF-16 code units, as their JavaScript and
.NET services do (:func:`to_utf16`, :func:`from_utf16`: the same for any text without emoji
and the like). The slot book holds each type's values and their synonyms.

Example:
    >>> spans = [EntitySpan(7, 13, "city", role="to")]
    >>> pieces("fly to Berlin now", spans)
    [('fly to ', None), ('Berlin', EntitySpan(start=7, end=13, entity='city', value=None, role='to', group=None)), (' now', None)]
    >>> from_pieces([("fly to ", None, None), ("Berlin", "city", "to")])
    [EntitySpan(start=7, end=13, entity='city', value=None, role='to', group=None)]
    >>> to_utf16("a😀b", 2), from_utf16("a😀b", 3)
    (3, 2)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from app.formats.common import Row
from app.formats.rasa_entities import SLOT_REFERENCE, spans_of
from core.slots import EntitySpan, SlotData

if TYPE_CHECKING:
    from app.formats.agents.export import ExportPlan

SHOW = 8


def entities_of(
    rows: Iterable[Row], slots: SlotData | None
) -> tuple[dict[str, list[EntitySpan]], dict[str, dict[str, list[str]]]]:
    """The rows' annotations (text -> spans that fit it, in order) and the slot book (entity ->
    value -> synonyms) an export writes."""
    if slots is None:
        return {}, {}
    spans: dict[str, list[EntitySpan]] = {}
    for row in rows:
        found = sorted(spans_of(slots.entities, row.text), key=lambda s: s.start)
        if found and fits(row.text, found):
            spans[row.text] = found
    values = {
        entity: {v: list(slots.synonyms.get(entity, {}).get(v, [])) for v in vs}
        for entity, vs in slots.book.items()
    }
    return spans, values


def fits(text: str, spans: Sequence[EntitySpan]) -> bool:
    """Whether the spans lie in the text, in order, none over another."""
    end = 0
    for s in sorted(spans, key=lambda s: s.start):
        if s.start < end or s.start >= s.end or s.end > len(text):
            return False
        end = s.end
    return True


def pieces(text: str, spans: Sequence[EntitySpan]) -> list[tuple[str, EntitySpan | None]]:
    """The text cut at its spans: plain pieces (None) and annotated ones (their span)."""
    out: list[tuple[str, EntitySpan | None]] = []
    at = 0
    for s in sorted(spans, key=lambda s: s.start):
        if s.start > at:
            out.append((text[at : s.start], None))
        out.append((text[s.start : s.end], s))
        at = s.end
    if at < len(text) or not out:
        out.append((text[at:], None))
    return out


def from_pieces(parts: Iterable[tuple[str, str | None, str | None]]) -> list[EntitySpan]:
    """The spans of a phrase written in pieces: ``(text, entity, role)``, entity None for a plain
    piece (Dialogflow's parts)."""
    out, at = [], 0
    for text, entity, role in parts:
        if entity:
            out.append(EntitySpan(at, at + len(text), entity, role=role or None))
        at += len(text)
    return out


def role_of(span: EntitySpan) -> str:
    """The name a phrase gives its span: its role, else its entity type."""
    return span.role or span.entity


def reference(text: str, span: EntitySpan) -> str | None:
    """The slot a span names when it is a slot reference (``{CardType}``), else None."""
    m = SLOT_REFERENCE.fullmatch(text[span.start : span.end])
    return m.group(1) if m else None


def to_utf16(text: str, index: int) -> int:
    """A character offset of ``text`` in UTF-16 code units."""
    return index + sum(1 for c in text[:index] if ord(c) > 0xFFFF)


def from_utf16(text: str, index: int) -> int:
    """A UTF-16 offset of ``text`` as a character offset (-1: inside a character)."""
    units = 0
    for i, c in enumerate(text):
        if units == index:
            return i
        units += 2 if ord(c) > 0xFFFF else 1
        if units > index:
            return -1
    return len(text) if units == index else -1


def left_out_note(what: str, items: Sequence[str], why: str) -> list[str]:
    """One note naming each item an export left out (the first :data:`SHOW` of them)."""
    if not items:
        return []
    shown = ", ".join(items[:SHOW]) + (
        f" and {len(items) - SHOW} more" if len(items) > SHOW else ""
    )
    return [f"Left out {len(items)} {what}: {why}: {shown}."]


def uncarried_values(plan: ExportPlan) -> list[tuple[str, str]]:
    """The slot book's (entity, value) pairs no annotation of the export writes, and each
    (entity, synonym) of a value: what a format without a place for an entity type's values
    leaves out."""
    carried = {
        (s.entity, text[s.start : s.end].strip())
        for text, spans in plan.entities.items()
        for s in spans
    }
    out = []
    for entity, values in plan.values.items():
        for value, words in values.items():
            if (entity, value) not in carried:
                out.append((entity, value))
            out += [(entity, w) for w in words]
    return out


def value_items(values: Mapping[str, Sequence[str]]) -> list[tuple[str, list[str]]]:
    """An entity type's (value, synonyms) pairs, in the slot book's order."""
    return [(v, list(words)) for v, words in values.items()]
