r"""Rasa entity annotations and lookup tables, both ways: ``[Berlin](city)``,
``[Berlin]{"entity": "city", "value": "BER", "role": "to"}`` and ``[Berlin](city:BER)`` are read
into the surface text (``Berlin``) plus spans (:class:`core.slots.EntitySpan`), and written back
from them. The spans feed the slot book (values per slot) and the intent's templates
(``fly me to {city}``); ``lookup:`` tables feed the slot book. CSV and JSONL carry the same spans
as JSON (:func:`read_spans`).

A text that only looks like markup (the literal ``[Berlin](city)`` someone typed) is written with
a ``\`` after its ``]`` (``[Berlin]\(city)``), which no Rasa reader takes for an annotation, and
read back without it; a ``]`` before a ``\`` gets one too, so every text comes back exactly. (Rasa
itself, which has no escape, trains on that text with the ``\`` in it.)

Example:
    >>> text, spans = read_markup('fly to [Berlin](city)')
    >>> text, spans
    ('fly to Berlin', [EntitySpan(start=7, end=13, entity='city', value=None, role=None, group=None)])
    >>> write_markup(text, spans)
    'fly to [Berlin](city)'
    >>> write_markup("say [Berlin](city) to me", []), read_markup("say [Berlin]\\(city) to me")
    ('say [Berlin]\\(city) to me', ('say [Berlin](city) to me', []))
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

from core.slots import EntitySpan, SlotData, SlotError, check_slot_name, template_of

ENTITY = re.compile(r"\[([^\[\]\n]+)\](\([^()\n]+\)|\{[^{}\n]*\})")
SLOT_REFERENCE = re.compile(r"\{([0-9A-Za-z][0-9A-Za-z_-]*)\}")  # "{CardType}": Lex's slot
_EXTRAS = ("value", "role", "group")
_TO_ESCAPE = re.compile(r"\](?=[({\\])")  # "](", "]{" and "]\" in a text outside annotations
_ESCAPED = re.compile(r"\]\\([({\\])")


def _escaped(plain: str) -> str:
    """A stretch of text outside annotations as written: no ``](`` or ``]{`` left in it."""
    return _TO_ESCAPE.sub(r"]\\", plain)


def _unescaped(written: str) -> str:
    """A stretch of text outside annotations as it was before :func:`_escaped`."""
    return _ESCAPED.sub(r"]\1", written)


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
        before = _unescaped(raw[pos : m.start()])
        out.append(before)
        length += len(before)
        entity, extras = _annotation(m.group(2))
        surface = m.group(1)
        spans.append(EntitySpan(length, length + len(surface), check_slot_name(entity), **extras))
        out.append(surface)
        length += len(surface)
        pos = m.end()
    out.append(_unescaped(raw[pos:]))
    return "".join(out), spans


def write_markup(text: str, spans: Sequence[EntitySpan]) -> str:
    """The text with each span written as Rasa markup (``(slot)`` when it has no extras), and
    what only looks like markup escaped (see the module docstring)."""
    out, pos = [], 0
    for span in sorted(spans, key=lambda e: e.start):
        if span.start < pos or span.end > len(text):
            return _escaped(text)  # spans that no longer fit the text: the plain text is right
        extras = {k: v for k in _EXTRAS if (v := getattr(span, k))}
        body = (
            json.dumps({"entity": span.entity, **extras}, ensure_ascii=False)
            if extras
            else f"({span.entity})"
        )
        out += [_escaped(text[pos : span.start]), f"[{text[span.start : span.end]}]{body}"]
        pos = span.end
    return "".join([*out, _escaped(text[pos:])])


_SPAN_KEYS = frozenset({"start", "end", "entity", *_EXTRAS})


def read_spans(value: object, text: str) -> list[EntitySpan]:
    """The entity spans a CSV cell (JSON text) or a JSONL key (a list) gives a text: a list of
    ``{"start", "end", "entity"}`` with optional ``value``, ``role`` and ``group``; offsets in
    characters of ``text``, no two spans overlapping.

    Raises:
        SlotError: not such a list, a span outside the text or over another, a bad slot name.

    Example:
        >>> read_spans('[{"start": 3, "end": 7, "entity": "city"}]', "to Rome")
        [EntitySpan(start=3, end=7, entity='city', value=None, role=None, group=None)]
    """
    if value in (None, "", []):
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            raise SlotError("entities must be a JSON list of spans") from None
    if not isinstance(value, list):
        raise SlotError("entities must be a list of spans")
    spans: list[EntitySpan] = []
    for item in value:
        ok = isinstance(item, dict) and set(item) <= _SPAN_KEYS
        ends = [item.get(k) for k in ("start", "end")] if ok else []
        if not ok or not all(isinstance(x, int) and not isinstance(x, bool) for x in ends):
            raise SlotError('an entity span is {"start": int, "end": int, "entity": "slot"}')
        if not isinstance(item.get("entity"), str) or not all(
            isinstance(item.get(k), str | None) for k in _EXTRAS
        ):
            raise SlotError("an entity span's entity, value, role and group are texts")
        start, end = ends
        if not 0 <= start < end <= len(text):
            raise SlotError(f"the entity span {start}-{end} is outside the text")
        spans.append(
            EntitySpan(start, end, check_slot_name(item["entity"]), *(item.get(k) for k in _EXTRAS))
        )
    spans.sort(key=lambda e: e.start)
    if any(a.end > b.start for a, b in pairwise(spans)):
        raise SlotError("two entity spans overlap")
    return spans


def is_reference(text: str, span: EntitySpan) -> bool:
    """Whether an annotated span is a slot reference (``{CardType}``, as Lex writes a slot in a
    sample utterance) rather than a value."""
    return bool(SLOT_REFERENCE.fullmatch(text[span.start : span.end]))


def add_example(
    data: SlotData, text: str, spans: Sequence[EntitySpan], labels: Sequence[str]
) -> None:
    """Record an annotated example: its values in the book (a slot reference is no value), its
    template under each intent (when every slot it names has values), its spans under its
    text (a text annotated twice keeps its first annotations: one text, one set of spans)."""
    if not spans:
        return
    for span in spans:
        value = text[span.start : span.end].strip()
        if value and not is_reference(text, span):
            data.add_value(span.entity, value)
    if all(data.book.get(span.entity) for span in spans):
        template = template_of(text, spans)
        for name in labels:
            mine = data.templates.setdefault(name, [])
            if template not in mine:
                mine.append(template)
    data.entities.setdefault(text, [s.to_dict() for s in spans])


def add_lookup(data: SlotData, slot: str, values: Sequence[str]) -> None:
    """Record a ``lookup:`` table's values under its slot."""
    mine = data.book.setdefault(check_slot_name(slot), [])
    mine += [v for v in dict.fromkeys(x.strip() for x in values) if v and v not in mine]


def spans_of(entities: Mapping[str, Sequence[Mapping[str, Any]]], text: str) -> list[EntitySpan]:
    """The stored spans of a text (none when it has no annotations)."""
    return [EntitySpan.from_dict(e) for e in entities.get(text, ())]
