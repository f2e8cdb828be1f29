"""A slot book file for projects that do not come from Rasa: YAML with a ``slot_book:`` mapping
(slot -> list of values), a ``templates:`` mapping (intent -> list of templates with ``{slot}``
placeholders) and a ``synonyms:`` mapping (slot -> value -> the other ways it is written: an
entity type's entries, so a slot type travels whole beside a CSV file). Each may be left out.
Read by :func:`app.formats.read_any` for a ``.yml``/``.yaml`` file that has one of these keys
and no ``nlu:``; written by :func:`dump_slot_book`.

Example:
    >>> doc = b"slot_book:\\n  city: [Berlin, Paris]\\ntemplates:\\n  book: ['fly to {city}']\\n"
    >>> data = parse_slot_book(doc).slots
    >>> data.book, data.templates
    ({'city': ['Berlin', 'Paris']}, {'book': ['fly to {city}']})
    >>> parse_slot_book(dump_slot_book(data).encode()).slots == data
    True
"""

from __future__ import annotations

import json
import re

import yaml

from app.formats.common import FormatError, ParsedFile, check_intent
from app.formats.safe_yaml import compose_yaml
from core.slots import SlotData, SlotError, check_slot_name, check_values

KEYS = ("slot_book", "templates", "synonyms")
_LOOKS_LIKE = re.compile(r"^(slot_book|templates|synonyms)\s*:", re.MULTILINE)
_NLU = re.compile(r"^nlu\s*:", re.MULTILINE)


def is_slot_book(text: str) -> bool:
    """True for a YAML text with a top-level ``slot_book:`` or ``templates:`` and no ``nlu:``."""
    return bool(_LOOKS_LIKE.search(text)) and not _NLU.search(text)


def _strings(node: yaml.Node, where: str, problems: list[tuple[int, str]]) -> list[str]:
    line = node.start_mark.line + 1
    if not isinstance(node, yaml.SequenceNode) or not all(
        isinstance(v, yaml.ScalarNode) for v in node.value
    ):
        problems.append((line, f"{where} must be a list of texts"))
        return []
    return [str(v.value) for v in node.value]


def _mapping(node: yaml.Node, key: str, problems: list[tuple[int, str]]) -> dict[str, list[str]]:
    if not isinstance(node, yaml.MappingNode):
        problems.append((node.start_mark.line + 1, f"'{key}:' must be a mapping"))
        return {}
    return {str(k.value): _strings(v, f"{key} {k.value!r}", problems) for k, v in node.value}


def parse_slot_book(data: bytes) -> ParsedFile:
    """Read a slot book file: no utterance rows, only :attr:`ParsedFile.slots`.

    Raises:
        FormatError: bad YAML, other keys, a bad slot name, an empty or repeated value, a bad
            intent name. Templates are checked against the project's book when imported.
    """
    from app.formats.common import decode

    root = compose_yaml(decode(data))
    if not isinstance(root, yaml.MappingNode):
        raise FormatError("A slot book file is a mapping with 'slot_book:' and/or 'templates:'.")
    problems: list[tuple[int, str]] = []
    found: dict[str, dict[str, list[str]]] = {}
    synonyms: dict[str, dict[str, list[str]]] = {}
    for k, v in root.value:
        key = str(k.value)
        if key not in KEYS:
            problems.append((k.start_mark.line + 1, f"unknown key {key!r}; use {', '.join(KEYS)}"))
            continue
        if key == "synonyms":
            if not isinstance(v, yaml.MappingNode):
                problems.append((v.start_mark.line + 1, "'synonyms:' must be a mapping"))
                continue
            synonyms = {
                str(sk.value): _mapping(sv, f"synonyms of {sk.value!r}", problems)
                for sk, sv in v.value
            }
            continue
        found[key] = _mapping(v, key, problems)
    book: dict[str, list[str]] = {}
    for slot, values in found.get("slot_book", {}).items():
        try:
            book[check_slot_name(slot)] = check_values(slot, values)
        except SlotError as exc:
            problems.append((0, str(exc)))
    templates = found.get("templates", {})
    problems += [(0, msg) for name in templates if (msg := check_intent(name))]
    if problems:
        raise FormatError(f"{len(problems)} problem(s) in the slot book file.", problems)
    n = sum(len(v) for v in templates.values())
    notes = [f"Slot book file: {len(book)} slot(s), {n} template(s)."]
    return ParsedFile([], notes, 0, slots=SlotData(book, templates, synonyms=synonyms))


def _item(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def dump_slot_book(data: SlotData) -> str:
    """A slot book file (YAML) with the book, the templates and the values' synonyms."""
    lines: list[str] = []
    for key, table in (("slot_book", data.book), ("templates", data.templates)):
        lines.append(f"{key}:" if table else f"{key}: {{}}")
        for name, items in sorted(table.items()):
            lines.append(f"  {_item(name)}:")
            lines += [f"  - {_item(t)}" for t in items]
    if any(data.synonyms.values()):
        lines.append("synonyms:")
        for slot, by_value in sorted(data.synonyms.items()):
            lines.append(f"  {_item(slot)}:")
            for value, words in by_value.items():
                lines.append(f"    {_item(value)}:")
                lines += [f"    - {_item(w)}" for w in words]
    return "\n".join(lines) + "\n"
