"""Writing Rasa NLU YAML: one intent item, the items that carry the slot book (``synonym:`` and
``lookup:``), and a whole file, fresh or written back into the Rasa file the project was imported
from (:mod:`app.formats.rasa_kept`), so that the file comes back as it went out.

What a fresh file adds to the intent items is only what no annotation carries: a ``lookup:``
table holds the slot values no annotated example writes (a value typed into the slot book, an
entity type's entry from a platform agent), a ``synonym:`` map the other ways a value is written
(an entity's synonyms). A row with several intents is written under ``intent1+intent2``, Rasa's
multi-intent convention, and the export says how to configure Rasa to read it so (its
tokenizer's ``intent_tokenization_flag`` and ``intent_split_symbol``); a file read back gives
the same multi-label row. A phrase the imported file held under two intents is written back under
both, as it came.

Example:
    >>> text, notes = write_rasa([Row("hi", ("greet",)), Row("hi and bye", ("bye", "greet"))])
    >>> print(text, end="")
    version: "3.1"
    nlu:
    - intent: bye+greet
      examples: |
        - hi and bye
    - intent: greet
      examples: |
        - hi
    >>> notes[0][:62]
    "1 utterance(s) with several intents are written as 'bye+greet'"
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from app.formats.common import Row
from app.formats.rasa_entities import spans_of, write_markup
from app.formats.safe_yaml import fits_block, quoted
from core.slots import SlotData

RASA_VERSION = "3.1"
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-+/.]*")
_YAML_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null", "none"})
MULTI_INTENT_CONFIG = (
    "Rasa reads them as several intents with intent_tokenization_flag: true and "
    'intent_split_symbol: "+" in the tokenizer of its config.yml'
)


def yaml_name(name: str) -> str:
    """An intent, slot or value name as a YAML scalar (quoted when it would not read back)."""
    if _PLAIN_NAME.fullmatch(name) and name.lower() not in _YAML_WORDS:
        return name
    return quoted(name)


def grouped(rows: Iterable[Row], separator: str) -> dict[str, list[Row]]:
    """Labelled rows by their intent item's name (``a+b`` for several intents), sorted."""
    groups: dict[str, list[Row]] = {}
    for row in rows:
        if not row.labels:
            continue
        bad = [n for n in row.labels if separator and separator in n and len(row.labels) == 1]
        if bad:
            raise ValueError(f"Intent {bad[0]!r} contains {separator!r}, the multi-intent mark.")
        groups.setdefault(separator.join(sorted(row.labels)), []).append(row)
    return dict(sorted(groups.items()))


def example_text(row: Row, slots: SlotData) -> str:
    """A row's example as written: its text with its entity markup."""
    return write_markup(row.text, spans_of(slots.entities, row.text))


def fits_examples_block(row: Row, slots: SlotData) -> bool:
    """Whether a row can be one line of an ``examples: |`` block."""
    return row.split == "train" and not row.context and fits_block(example_text(row, slots))


def example_lines(rows: Sequence[Row], slots: SlotData, indent: str = "    ") -> list[str]:
    """Block lines (``- text``) of rows that :func:`fits_examples_block`."""
    return [f"{indent}- {example_text(r, slots)}" for r in rows]


def item_lines(name: str, rows: Sequence[Row], description: str, slots: SlotData) -> list[str]:
    """An intent item: its ``metadata`` description, its examples as a block when they all fit
    one, else as a list with each example's split and context in its ``metadata``."""
    lines = [f"- intent: {yaml_name(name)}"]
    if description:
        lines.append(f"  metadata: {{description: {quoted(description)}}}")
    if not rows:
        return lines
    if all(fits_examples_block(r, slots) for r in rows):
        return [*lines, "  examples: |", *example_lines(rows, slots)]
    lines.append("  examples:")
    for r in rows:
        lines.append(f"  - text: {quoted(example_text(r, slots))}")
        meta = [f"split: {r.split}"] if r.split != "train" else []
        meta += [f"context: {quoted(r.context)}"] if r.context else []
        if meta:
            lines.append(f"    metadata: {{{', '.join(meta)}}}")
    return lines


def carried_values(rows: Iterable[Row], slots: SlotData) -> set[tuple[str, str]]:
    """The (slot, value) pairs the rows' annotations write (their text, or their ``value``)."""
    found = set()
    for row in rows:
        for span in spans_of(slots.entities, row.text):
            found.add((span.entity, row.text[span.start : span.end].strip()))
            if span.value:
                found.add((span.entity, span.value))
    return found


def book_lines(
    slots: SlotData,
    carried: set[tuple[str, str]],
    kept_lookups: Mapping[str, Sequence[str]] | None = None,
    kept_synonyms: Mapping[str, Sequence[str]] | None = None,
) -> list[str]:
    """The ``lookup:`` and ``synonym:`` items of what no annotation and no kept item carries
    (see the module docstring)."""
    kept_lookups, kept_synonyms = kept_lookups or {}, kept_synonyms or {}
    lines: list[str] = []
    for slot, values in sorted(slots.book.items()):
        have = set(kept_lookups.get(slot, ()))
        rest = [v for v in values if (slot, v) not in carried and v not in have]
        if not rest:
            continue
        lines.append(f"- lookup: {yaml_name(slot)}")
        if all(fits_block(v) for v in rest):
            lines += ["  examples: |", *(f"    - {v}" for v in rest)]
        else:
            lines += ["  examples:", *(f"  - {quoted(v)}" for v in rest)]
    said: dict[str, list[str]] = {}
    for by_value in slots.synonyms.values():
        for value, words in by_value.items():
            mine = said.setdefault(value, [])
            mine += [w for w in words if w not in mine and w not in kept_synonyms.get(value, ())]
    for value, words in sorted(said.items()):
        if words:
            lines.append(f"- synonym: {yaml_name(value)}")
            if all(fits_block(w) for w in words):
                lines += ["  examples: |", *(f"    - {w}" for w in words)]
            else:
                lines += ["  examples:", *(f"  - {quoted(w)}" for w in words)]
    return lines


def multi_note(groups: Iterable[str], separator: str) -> list[str]:
    """The note on rows written under ``a+b`` intents (:data:`MULTI_INTENT_CONFIG`)."""
    multi = [name for name in groups if separator in name]
    if not multi:
        return []
    shown = ", ".join(repr(n) for n in multi[:5]) + (" ..." if len(multi) > 5 else "")
    return [
        f"{len(multi)} utterance(s) with several intents are written as {shown}, Rasa's "
        f"multi-intent convention: {MULTI_INTENT_CONFIG}; an import reads them back as the "
        "same rows."
    ]


def write_rasa(
    rows: Iterable[Row],
    descriptions: Mapping[str, str] | None = None,
    slots: SlotData | None = None,
    *,
    separator: str = "+",
) -> tuple[str, list[str]]:
    """Labelled rows as a fresh Rasa NLU YAML file (``version: "3.1"``; see the module
    docstring), and notes on how it was written (a project imported from a Rasa file is written
    back into it instead: :func:`app.formats.rasa_kept.write_into`)."""
    rows = [r for r in rows if r.labels]
    slots = slots or SlotData()
    described = {n: d for n, d in (descriptions or {}).items() if d}
    lines = [f'version: "{RASA_VERSION}"', "nlu:"]
    groups: dict[str, list[Row]] = {n: [] for n in described}
    groups.update(grouped(rows, separator))
    for name, group in sorted(groups.items()):
        lines += item_lines(name, group, described.get(name, ""), slots)
    lines += book_lines(slots, carried_values(rows, slots))
    return "\n".join(lines) + "\n", multi_note(groups, separator)
