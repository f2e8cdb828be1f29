"""Rasa entity annotations and lookup tables, both ways: ``[Berlin](city)``,
``[Berlin]{"entity": "city", "value": "BER", "role": "to"}`` and ``[Berlin](city:BER)`` are read
into the surface text (``Berlin``) plus spans (:class:`core.slots.EntitySpan`), and written back
from them. The spans feed the slot book (values per slot) and the intent's templates
(``fly me to {city}``); ``lookup:`` tables feed the slot book.

Example:
    >>> text, spans = read_markup('fly to [Berlin](city)')
    >>> text, spans
    ('fly to Berlin', [EntitySpan(start=7, end=13, entity='city', value=None, role=None, group=None)])
    >>> write_markup(text, spans)
    'fly to [Berlin](city)'
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from core.slots import EntitySpan, SlotData, SlotError, check_slot_name, template_of

ENTITY = re.compile(r"\[([^\[\]\n]+)\](\([^()\n]+\)|\{[^{}\n]*\})")
_EXTRAS = ("value", "role", "group")


def _annotation(body: str) -> tuple[str, dict[str, str]]:
    """(entity, extras) of ``(city)``, ``(city:value)`` or ``{"entity": ...}``."""
    if body.startswith("("):
        name, _, value = body[1:-1].partition(":")
        return name.strip(), ({"value": value.strip()} if value.strip() else {})
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise SlotError(f"the entity annotation {body[:40]!r} is not valid JSON") from exc
    if not isinstance(data, dict) or not isinstance(data.get("entity"), str):
        raise SlotError(f"the entity annotation {body[:40]!r} needs an 'entity' name")
    extras = {k: str(data[k]) for k in _EXTRAS if data.get(k) is not None}
    return data["entity"], extras


def read_markup(raw: str) -> tuple[str, list[EntitySpan]]:
    """The surface text and the entity spans of an annotated example.

    Raises:
        SlotError: an annotation that is not JSON, has no entity, or names no plain slot.
    """
    out: list[str] = []
    spans: list[EntitySpan] = []
    pos = length = 0
    for m in ENTITY.finditer(raw):
        before = raw[pos : m.start()]
        out.append(before)
        length += len(before)
        entity, extras = _annotation(m.group(2))
        surface = m.group(1)
        spans.append(EntitySpan(length, length + len(surface), check_slot_name(entity), **extras))
        out.append(surface)
        length += len(surface)
        pos = m.end()
    out.append(raw[pos:])
    return "".join(out), spans


def write_markup(text: str, spans: Sequence[EntitySpan]) -> str:
    """The text with each span written as Rasa markup (``(slot)`` when it has no extras)."""
    out, pos = [], 0
    for span in sorted(spans, key=lambda e: e.start):
        if span.start < pos or span.end > len(text):
            return text  # spans that no longer fit the text: the plain text is still right
        extras = {k: v for k in _EXTRAS if (v := getattr(span, k))}
        body = (
            json.dumps({"entity": span.entity, **extras}, ensure_ascii=False)
            if extras
            else f"({span.entity})"
        )
        out += [text[pos : span.start], f"[{text[span.start : span.end]}]{body}"]
        pos = span.end
    return "".join([*out, text[pos:]])


def add_example(
    data: SlotData, text: str, spans: Sequence[EntitySpan], labels: Sequence[str]
) -> None:
    """Record an annotated example: its values in the book, its template under each intent,
    its spans under its text."""
    if not spans:
        return
    for span in spans:
        data.book.setdefault(span.entity, [])
        value = text[span.start : span.end].strip()
        if value and value not in data.book[span.entity]:
            data.book[span.entity].append(value)
    template = template_of(text, spans)
    for name in labels:
        mine = data.templates.setdefault(name, [])
        if template not in mine:
            mine.append(template)
    data.entities[text] = [s.to_dict() for s in spans]


def add_lookup(data: SlotData, slot: str, values: Sequence[str]) -> None:
    """Record a ``lookup:`` table's values under its slot."""
    mine = data.book.setdefault(check_slot_name(slot), [])
    mine += [v for v in dict.fromkeys(x.strip() for x in values) if v and v not in mine]


def spans_of(entities: Mapping[str, Sequence[Mapping[str, Any]]], text: str) -> list[EntitySpan]:
    """The stored spans of a text (none when it has no annotations)."""
    return [EntitySpan.from_dict(e) for e in entities.get(text, ())]


def dump_lookups(book: Mapping[str, Sequence[str]]) -> list[str]:
    """Rasa ``lookup:`` items (YAML lines) for a slot book."""
    lines: list[str] = []
    for slot, values in sorted(book.items()):
        lines += [f"- lookup: {slot}", "  examples: |"]
        lines += [f"    - {v}" for v in values]
    return lines
