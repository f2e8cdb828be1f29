"""A project's Rasa file written back into the file it was imported from, so that it comes back
as it went out: the project keeps the file (as it keeps a platform agent's, :mod:`storage.agents`)
and an export changes only what the project changed.

Line by line: everything outside the ``nlu:`` list (``version``, comments, other sections) and
every item the project did not change (its lines, its comments, its style: a ``synonym:``,
``regex:`` or ``lookup:`` item always) is written as it was; an intent item whose examples
changed keeps its unchanged example lines and loses those of phrases deleted or relabelled in the
project, and takes the new ones at its end (the whole item is written anew when a new one cannot
be a line of its block, or its description changed); a phrase the file held under two intents
is written back under both while the project still gives it those two. New intents follow the
last intent item, new slot values and synonyms (what no annotation or kept item carries) the last
item. A file this cannot follow (no block ``nlu:`` list) is written fresh, and the notes say so.

Example:
    >>> kept = b'version: "3.1"\\nnlu:\\n# greetings\\n- intent: greet\\n  examples: |\\n    - hi\\n' \\
    ...        b'- synonym: hello\\n  examples: |\\n    - hallo\\n'
    >>> text, _ = write_into(kept, [Row("hi", ("greet",)), Row("hey", ("greet",))], {}, SlotData())
    >>> print(text, end="")
    version: "3.1"
    nlu:
    # greetings
    - intent: greet
      examples: |
        - hi
        - hey
    - synonym: hello
      examples: |
        - hallo
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import yaml

from app.formats.common import FormatError, Row, decode
from app.formats.rasa_entities import read_markup, spans_of
from app.formats.rasa_write import (
    book_lines,
    carried_values,
    example_lines,
    fits_examples_block,
    grouped,
    item_lines,
    multi_note,
    write_rasa,
)
from app.formats.safe_yaml import compose_yaml
from core.slots import EntitySpan, SlotData, SlotError
from storage.texts import nfc

_STR = "tag:yaml.org,2002:str"


@dataclass
class Example:
    """One example of a kept intent item: what the import read, and its line (block form)."""

    text: str
    spans: list[EntitySpan]
    split: str
    context: str
    line: int = -1  # 0-based line of a block example; -1 in the list form


@dataclass
class Item:
    """One ``nlu:`` item of the kept file: lines ``[start, end)`` (its content; the blank and
    comment lines after it are the next gap)."""

    kind: str
    start: int
    end: int
    name: str = ""  # the intent (as written: "a+b"), the synonym's value or the lookup's slot
    labels: tuple[str, ...] = ()
    description: str = ""
    block: bool = False
    examples: list[Example] = field(default_factory=list)
    words: list[str] = field(default_factory=list)  # a synonym's or lookup's examples


def _key(node: yaml.Node) -> str:
    return str(node.value) if isinstance(node, yaml.ScalarNode) else "?"


def _last_content(lines: list[str], start: int, end: int) -> int:
    """``end`` moved back over blank and comment lines (they belong to the gap after)."""
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip()[:1] == "#"):
        end -= 1
    return end


def _examples(node: yaml.Node | None) -> tuple[list[Example], bool]:
    """The examples of an ``examples:`` value as the import read them, and whether a block."""
    from app.formats.rasa import _rasa_examples

    if node is None:
        return [], False
    block = isinstance(node, yaml.ScalarNode) and node.style == "|"
    out = []
    for line, raw, split, context in _rasa_examples(node, []):
        try:
            flat, spans = read_markup(raw.strip())
        except SlotError:
            flat, spans = raw.strip(), []
        if flat != flat.strip():
            spans = []
        out.append(Example(nfc(flat.strip()), spans, split, context, line - 1 if block else -1))
    return out, block


def read_kept(text: str) -> tuple[list[str], list[Item], int] | None:
    """The kept file's lines, its ``nlu:`` items and the line after the list; None for a file
    this module cannot follow (no block ``nlu:`` list of mappings)."""
    root = compose_yaml(text)
    if not isinstance(root, yaml.MappingNode):
        return None
    nlu = next((v for k, v in root.value if _key(k) == "nlu"), None)
    if not isinstance(nlu, yaml.SequenceNode) or nlu.flow_style or not nlu.value:
        return None
    if not all(isinstance(i, yaml.MappingNode) and not i.flow_style for i in nlu.value):
        return None
    lines = text.splitlines(keepends=True)
    stop = nlu.end_mark.line + (1 if nlu.end_mark.column else 0)
    starts = [i.start_mark.line for i in nlu.value] + [min(stop, len(lines))]
    items = []
    for node, start, after in zip(nlu.value, starts, starts[1:], strict=False):
        fields = {_key(k): v for k, v in node.value}
        end = _last_content(lines, start, after)
        kind = next((k for k in ("intent", "synonym", "regex", "lookup") if k in fields), "other")
        item = Item(kind, start, end, _key(fields[kind]) if kind != "other" else "")
        if kind == "intent":
            item.labels = tuple(sorted(p.strip() for p in item.name.split("+")))
            meta = fields.get("metadata")
            for k, v in meta.value if isinstance(meta, yaml.MappingNode) else []:
                if _key(k) == "description" and isinstance(v, yaml.ScalarNode) and v.tag == _STR:
                    item.description = " ".join(str(v.value).split())
            item.examples, item.block = _examples(fields.get("examples"))
        elif kind in ("synonym", "lookup") and (node := fields.get("examples")) is not None:
            from app.formats.rasa import _rasa_examples

            # as the import reads them: each line as written (markup in a lookup is its text)
            item.words = [t.strip() for _, t, _, _ in _rasa_examples(node, [])]
        items.append(item)
    return lines, items, starts[-1]


def _spans(found: Sequence[EntitySpan]) -> list[dict[str, object]]:
    return [s.to_dict() for s in sorted(found, key=lambda s: s.start)]


def write_into(
    kept: bytes,
    rows: Sequence[Row],
    descriptions: Mapping[str, str],
    slots: SlotData,
    separator: str = "+",
) -> tuple[str, list[str]]:
    """The project's labelled ``rows`` (with the intents' descriptions and the slot data)
    written back into the ``kept`` Rasa file (see the module docstring); notes."""
    rows = [r for r in rows if r.labels]
    described = {n: d for n, d in descriptions.items() if d}
    try:
        found = read_kept(decode(kept))
    except FormatError:
        found = None
    if found is None:
        text, notes = write_rasa(rows, described, slots, separator=separator)
        return text, [*notes, "The imported Rasa file has no block 'nlu:' list: written anew."]
    lines, items, stop = found
    end_line = "\r\n" if lines[0].endswith("\r\n") else "\n"
    first = lines[items[0].start]
    indent = first[: len(first) - len(first.lstrip())]
    by_text = {r.text: r for r in rows}
    sits: dict[str, set[str]] = {}
    markups: dict[str, list[list[dict[str, object]]]] = {}  # a text's markups in the file
    for item in items:
        for ex in item.examples:
            sits.setdefault(ex.text, set()).update(item.labels)
            markups.setdefault(ex.text, []).append(_spans(ex.spans))

    def in_place(ex: Example) -> bool:
        """A kept example stays as written while its row is as the file gave it: the same
        intents, split and context, and the annotations of one of the text's markups in the
        file (a text written twice under different markup keeps both lines)."""
        row = by_text.get(ex.text)
        return (
            row is not None
            and set(row.labels) == sits[ex.text]
            and (row.split, row.context) == (ex.split, ex.context)
            and _spans(spans_of(slots.entities, row.text)) in markups[ex.text]
        )

    placed = {ex.text for item in items for ex in item.examples if in_place(ex)}
    homes = {"+".join(i.labels): i for i in reversed(items) if i.kind == "intent"}
    new = grouped([r for r in rows if r.text not in placed], separator)
    out: list[str] = lines[: items[0].start]
    last_intent = max((k for k, i in enumerate(items) if i.kind == "intent"), default=-1)
    made: list[str] = []

    def generated(text: list[str]) -> list[str]:
        return [indent + line + end_line for line in text]

    for k, item in enumerate(items):
        body = lines[item.start : item.end]
        if item.kind == "intent":
            key = "+".join(item.labels)
            added = new.pop(key, []) if homes.get(key) is item else []
            keep = [ex for ex in item.examples if in_place(ex)]
            body = _intent_body(lines, item, keep, added, described, slots, indent, end_line)
        out += body
        if k == last_intent:
            for name in [n for n in described if n not in homes and n not in new]:
                new[name] = []
            for name, group in sorted(new.items()):
                made.append(name)
                out += generated(item_lines(name, group, described.get(name, ""), slots))
        if k == len(items) - 1:
            kept_lookups = {i.name: i.words for i in items if i.kind == "lookup"}
            kept_synonyms = {i.name: i.words for i in items if i.kind == "synonym"}
            carried = carried_values(rows, slots)
            out += generated(book_lines(slots, carried, kept_lookups, kept_synonyms))
        out += lines[item.end : items[k + 1].start if k + 1 < len(items) else stop]
    out += lines[stop:]
    whole = [line if line.endswith(("\n", "\r")) else line + end_line for line in out[:-1]]
    return "".join([*whole, *out[-1:]]), multi_note(made, separator)


def _intent_body(
    lines: list[str],
    item: Item,
    keep: list[Example],
    added: list[Row],
    described: Mapping[str, str],
    slots: SlotData,
    indent: str,
    end_line: str,
) -> list[str]:
    """A kept intent item's lines after the export: ``keep`` its examples still in place,
    ``added`` the rows it takes (see the module docstring)."""
    description = described.get(item.name, "") if len(item.labels) == 1 else ""
    same_description = description == item.description
    if len(keep) == len(item.examples) and not added and same_description:
        return lines[item.start : item.end]
    if not keep and not added and not description:
        return []  # an intent deleted in the project (or left with no phrase)
    fits = all(fits_examples_block(r, slots) for r in added)
    if item.block and keep and same_description and fits:
        dropped = {ex.line for ex in item.examples} - {ex.line for ex in keep}
        last = max(ex.line for ex in keep)
        pad = lines[last][: len(lines[last]) - len(lines[last].lstrip())]
        new = [line + end_line for line in example_lines(added, slots, pad)]
        body: list[str] = []
        for n in range(item.start, item.end):
            if n not in dropped:
                body.append(lines[n])
            if n == last:
                body += new
        return body
    rows = [Row(ex.text, tuple(item.labels), ex.split, ex.context) for ex in keep]
    written = item_lines(item.name, [*rows, *added], description, slots)
    return [indent + line + end_line for line in written]
