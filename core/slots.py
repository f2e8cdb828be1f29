"""TaDSE's slot book and templates (``papers/tadse.txt``): the rules, as pure functions.

A *slot book* maps a slot name to its values (``{"city": ["Berlin", "Paris"]}``); a *template*
is an utterance with its slot values replaced by ``{slot}`` placeholders (``"fly me to {city}"``).
They are project data: checked here, stored with the project, carried by Rasa YAML and
slot book files. The paper's template filling and template loss left ``TrainConfig`` after losing
on both bench data sets (``bench/RESULTS.md``), so the product neither trains nor predicts with
them. Nothing here touches a database or a model.

Example:
    >>> book = {"city": ["Berlin", "Paris"]}
    >>> check_template("fly me to {city}", book)
    'fly me to {city}'
    >>> template_of("fly me to Berlin", [EntitySpan(10, 16, "city")])
    'fly me to {city}'
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MAX_SLOT_CHARS = 80
MAX_VALUE_CHARS = 200
# The largest list a platform takes: a LUIS list entity holds 20,000 items (its documented model
# limits; a real app's airline list has 5,482), so a real export always fits.
MAX_VALUES_PER_SLOT = 20_000
MAX_TEMPLATE_CHARS = 2000
SLOT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-.]*")
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_\-.]*)\}")


class SlotError(ValueError):
    """A slot name, value or template that cannot be stored; the message says why."""


@dataclass(frozen=True)
class EntitySpan:
    """An entity annotation on an utterance: ``text[start:end]`` is a value of slot ``entity``.

    ``value`` (a synonym's normalised value), ``role`` and ``group`` are Rasa's optional extras,
    kept so that an export writes back what was imported."""

    start: int
    end: int
    entity: str
    value: str | None = None
    role: str | None = None
    group: str | None = None

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"start": self.start, "end": self.end, "entity": self.entity}
        out.update({k: v for k in ("value", "role", "group") if (v := getattr(self, k))})
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> EntitySpan:
        def opt(key: str) -> str | None:
            v = data.get(key)
            return None if v is None else str(v)

        return cls(
            int(str(data["start"])),
            int(str(data["end"])),
            str(data["entity"]),
            opt("value"),
            opt("role"),
            opt("group"),
        )


@dataclass(frozen=True)
class SlotData:
    """What a file brings besides its utterances: slot values, templates per intent, the
    entity annotations per utterance text (:meth:`EntitySpan.to_dict` form) and the synonyms
    of slot values (slot -> value -> the other ways it is written: an entity type's entries)."""

    book: dict[str, list[str]] = field(default_factory=dict)
    templates: dict[str, list[str]] = field(default_factory=dict)
    entities: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    synonyms: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.book or self.templates or self.entities or self.synonyms)

    def add_value(self, slot: str, value: str, synonyms: Sequence[str] = ()) -> None:
        """Record a value of ``slot`` (once) and the synonyms it lacks (not the value itself).

        Example:
            >>> data = SlotData()
            >>> data.add_value("card", "credit", ["credit card", "credit"])
            >>> data.book, data.synonyms
            ({'card': ['credit']}, {'card': {'credit': ['credit card']}})
        """
        value = value.strip()
        if not value:
            return
        values = self.book.setdefault(slot, [])
        if value not in values:
            values.append(value)
        said = [w.strip() for w in synonyms if w.strip() and w.strip() != value]
        if said:
            mine = self.synonyms.setdefault(slot, {}).setdefault(value, [])
            mine += [w for w in dict.fromkeys(said) if w not in mine]


def check_slot_name(name: str) -> str:
    """The slot name, trimmed; :class:`SlotError` when it is not a plain name.

    Example:
        >>> check_slot_name(" city ")
        'city'
    """
    clean = (name or "").strip()
    if not clean:
        raise SlotError("A slot needs a name.")
    if len(clean) > MAX_SLOT_CHARS or not SLOT_NAME.fullmatch(clean):
        raise SlotError(
            f"Slot name {clean[:40]!r} is not a plain name: use letters, digits, _ - . "
            f"(starting with a letter or _), at most {MAX_SLOT_CHARS} characters."
        )
    return clean


def check_values(slot: str, values: Iterable[str]) -> list[str]:
    """The values, trimmed, in order; :class:`SlotError` for an empty or repeated value.

    Example:
        >>> check_values("city", ["Berlin", " Paris "])
        ['Berlin', 'Paris']
    """
    out: list[str] = []
    seen: set[str] = set()
    for raw in values:
        value = (raw or "").strip()
        if not value:
            raise SlotError(f"Slot {slot!r}: an empty value; remove the empty line.")
        if len(value) > MAX_VALUE_CHARS or "\n" in value or "{" in value or "}" in value:
            raise SlotError(
                f"Slot {slot!r}: the value {value[:40]!r} is longer than {MAX_VALUE_CHARS} "
                "characters or holds a line break or a brace."
            )
        if value in seen:
            raise SlotError(f"Slot {slot!r}: the value {value!r} is listed twice.")
        seen.add(value)
        out.append(value)
    if len(out) > MAX_VALUES_PER_SLOT:
        raise SlotError(
            f"Slot {slot!r} has {len(out):,} values; the limit is {MAX_VALUES_PER_SLOT:,} (the "
            "largest list entity LUIS takes): split its values between two slots, or leave out "
            "those no utterance names, and import again."
        )
    return out


def placeholders(template: str) -> list[str]:
    """The slot names a template names, in order (repeats kept).

    Example:
        >>> placeholders("from {city} to {city} at {time}")
        ['city', 'city', 'time']
    """
    return PLACEHOLDER.findall(template)


def check_template(template: str, book: Mapping[str, Sequence[str]]) -> str:
    """The template, trimmed; :class:`SlotError` when it is empty, names no slot, or names a slot
    the book lacks."""
    clean = (template or "").strip()
    if not clean:
        raise SlotError("A template is empty.")
    if len(clean) > MAX_TEMPLATE_CHARS or "\n" in clean:
        raise SlotError(f"A template is one line of at most {MAX_TEMPLATE_CHARS} characters.")
    names = placeholders(clean)
    if not names:
        raise SlotError(
            f"The template {clean[:60]!r} names no slot: write a value as {{slot}}, e.g. "
            "'fly me to {city}'."
        )
    missing = sorted({n for n in names if n not in book})
    if missing:
        raise SlotError(
            f"The template {clean[:60]!r} names slot(s) the slot book lacks: "
            f"{', '.join(missing)}. Add their values first."
        )
    return clean


def check_templates(templates: Iterable[str], book: Mapping[str, Sequence[str]]) -> list[str]:
    """Every template checked (:func:`check_template`), none twice."""
    out: list[str] = []
    for t in templates:
        clean = check_template(t, book)
        if clean in out:
            raise SlotError(f"The template {clean[:60]!r} is listed twice.")
        out.append(clean)
    return out


def template_of(text: str, spans: Sequence[EntitySpan]) -> str:
    """The utterance with each annotated span replaced by ``{entity}``.

    Raises:
        SlotError: spans that overlap or fall outside the text.
    """
    out, pos = [], 0
    for span in sorted(spans, key=lambda e: e.start):
        if span.start < pos or span.end > len(text) or span.start >= span.end:
            raise SlotError(f"Entity spans of {text[:60]!r} overlap or fall outside it.")
        out += [text[pos : span.start], "{" + span.entity + "}"]
        pos = span.end
    return "".join([*out, text[pos:]])
