"""TaDSE's slot book and templates (``papers/tadse.txt``): the rules, as pure functions.

A *slot book* maps a slot name to its values (``{"city": ["Berlin", "Paris"]}``); a *template*
is an utterance with its slot values replaced by ``{slot}`` placeholders (``"fly me to {city}"``).
Filling a template with values from the book makes new, natural training utterances (template
filling); the template of an utterance is also what the template-aware loss pulls it toward, and
what semantic compression mixes into a query's vector. Nothing here touches a database or a model.

Example:
    >>> book = {"city": ["Berlin", "Paris"]}
    >>> check_template("fly me to {city}", book)
    'fly me to {city}'
    >>> [f.text for f in fill_templates({"book": ["fly me to {city}"]}, book, per_intent=5)]
    ['fly me to Berlin', 'fly me to Paris']
    >>> template_of("fly me to Berlin", [EntitySpan(10, 16, "city")])
    'fly me to {city}'
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

MAX_SLOT_CHARS = 80
MAX_VALUE_CHARS = 200
MAX_VALUES_PER_SLOT = 5000
MAX_TEMPLATE_CHARS = 2000
SLOT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-.]*")
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_\-.]*)\}")
# Fillings tried per template before giving up on finding new ones (a template with few values).
_TRIES_PER_TEMPLATE = 50


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
class Filled:
    """A training utterance made from a template: its text, intent and the template."""

    text: str
    intent: str
    template: str


@dataclass(frozen=True)
class SlotData:
    """What a file brings besides its utterances: slot values, templates per intent and the
    entity annotations per utterance text (:meth:`EntitySpan.to_dict` form)."""

    book: dict[str, list[str]] = field(default_factory=dict)
    templates: dict[str, list[str]] = field(default_factory=dict)
    entities: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.book or self.templates or self.entities)


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
        raise SlotError(f"Slot {slot!r} has {len(out)} values; the limit is {MAX_VALUES_PER_SLOT}.")
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


def fill(template: str, values: Mapping[str, str]) -> str:
    """The template with each ``{slot}`` replaced by ``values[slot]``."""
    return PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def fill_templates(
    templates: Mapping[str, Sequence[str]],
    book: Mapping[str, Sequence[str]],
    *,
    per_intent: int,
    seed: int = 0,
    exclude: Iterable[str] = (),
) -> list[Filled]:
    """Up to ``per_intent`` new utterances per intent, filled from its templates with the book's
    values; the same inputs and seed give the same list.

    Each template is filled in turn (round robin), with every combination of values when there
    are few and random draws otherwise, so one template with many values cannot take an intent's
    whole share. A text in ``exclude`` (the labelled utterances) or already made is skipped; a
    template naming a slot the book lacks is skipped too.

    Example:
        >>> book = {"city": ["Rome", "Oslo", "Lima"]}
        >>> out = fill_templates({"go": ["to {city}", "fly to {city}"]}, book, per_intent=3, seed=1)
        >>> len(out), len({f.text for f in out})
        (3, 3)
    """
    if per_intent < 0:
        raise ValueError("per_intent must be 0 or more.")
    made: list[Filled] = []
    taken = set(exclude)
    for intent in sorted(templates):
        rng = random.Random(f"{seed}:{intent}")
        streams = [
            _fillings(t, book, rng)
            for t in sorted(set(templates[intent]))
            if all(n in book and book[n] for n in placeholders(t))
        ]
        mine = 0
        while streams and mine < per_intent:
            for stream in list(streams):
                got = next(stream, None)
                if got is None:
                    streams.remove(stream)
                    continue
                template, text = got
                if text in taken:
                    continue
                taken.add(text)
                made.append(Filled(text, intent, template))
                mine += 1
                if mine >= per_intent:
                    break
    return made


def _fillings(
    template: str, book: Mapping[str, Sequence[str]], rng: random.Random
) -> Iterator[tuple[str, str]]:
    """(template, filled text) pairs: all combinations in a seeded order when there are at most
    ``_TRIES_PER_TEMPLATE``, else that many seeded random draws."""
    names = sorted(set(placeholders(template)))
    pools = [list(book[n]) for n in names]
    total = 1
    for pool in pools:
        total *= len(pool)
    if total <= _TRIES_PER_TEMPLATE:
        combos = list(itertools.product(*pools))
        rng.shuffle(combos)
    else:
        combos = [tuple(rng.choice(pool) for pool in pools) for _ in range(_TRIES_PER_TEMPLATE)]
    for combo in combos:
        yield template, fill(template, dict(zip(names, combo, strict=True)))


def compress(text: str, book: Mapping[str, Sequence[str]]) -> str:
    """The query's template by the book: each known value (whole words, any case, longest first)
    replaced by ``{slot}``. A text with no known value comes back unchanged.

    Example:
        >>> compress("Fly me to berlin tomorrow", {"city": ["Berlin"], "day": ["tomorrow"]})
        'Fly me to {city} {day}'
    """
    pairs = sorted(
        ((v, slot) for slot, values in book.items() for v in values), key=lambda p: -len(p[0])
    )
    if not pairs:
        return text
    slot_of = {v.lower(): slot for v, slot in reversed(pairs)}
    pattern = re.compile(
        r"(?<!\w)(" + "|".join(re.escape(v) for v, _ in pairs) + r")(?!\w)", re.IGNORECASE
    )
    return pattern.sub(lambda m: "{" + slot_of[m.group(1).lower()] + "}", text)


def compressed_vectors(
    encode: Callable[[list[str]], np.ndarray],
    texts: Sequence[str],
    book: Mapping[str, Sequence[str]],
    weight: float,
) -> np.ndarray:
    """TaDSE's semantic compression: ``weight``·enc(template) + (1 − weight)·enc(utterance),
    re-normalised, where the template is :func:`compress` of the text (a text with no known value
    keeps its own vector). Pool and queries must be encoded the same way.

    Example:
        >>> enc = lambda ts: np.array([[1.0, 0.0] if "{" in t else [0.0, 1.0] for t in ts])
        >>> vecs = compressed_vectors(enc, ["to Rome", "hi"], {"city": ["Rome"]}, 0.5)
        >>> [[round(float(x), 3) for x in v] for v in vecs]
        [[0.707, 0.707], [0.0, 1.0]]
    """
    if not 0.0 <= weight < 1.0:
        raise ValueError(f"the compression weight must be in [0, 1), got {weight!r}.")
    plain = np.asarray(encode(list(texts)), dtype=np.float32)
    masked = [compress(t, book) for t in texts]
    changed = [i for i, (t, m) in enumerate(zip(texts, masked, strict=True)) if t != m]
    if not weight or not changed:
        return plain
    out = plain.copy()
    out[changed] = (
        weight * np.asarray(encode([masked[i] for i in changed])) + (1 - weight) * (plain[changed])
    )
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms == 0, 1.0, norms)
