"""Rasa NLU YAML (``version: "3.1"``): read and write.

An ``nlu:`` item ``- intent: name`` holds an ``examples: |`` block of ``- text`` lines, or the list
form ``examples: [{text: ..., metadata: ...}]``.

- Entity annotations ``[Berlin](city)`` and ``[Berlin]{"entity": "city"}`` are *kept*: the
  utterance's text is the surface text (``Berlin``, what the classifier sees), and the annotation
  is kept beside it (:class:`core.slots.SlotData`): its value joins the slot book, the example with
  ``{city}`` in place of the value becomes a template of its intent, and the spans are stored on
  the utterance, so an export writes the markup back (``keep_entity_markup=True`` keeps the
  markup as typed in the text instead). ``lookup:`` tables join the slot book; a ``synonym:``
  map gives the value its annotations name its synonyms.
- The file itself is kept with the project (as a platform agent's is), so an export to Rasa
  writes the project back into it: what the project did not change comes back line for line,
  its ``synonym:``, ``regex:`` and ``lookup:`` items and comments with it
  (:mod:`app.formats.rasa_kept`); nothing is added that no row or slot value asks for.
- A multi-intent name ``a+b`` becomes the labels ``("a", "b")``; a multi-label row the file did
  not hold under each of its intents is written that way, Rasa's multi-intent convention, and
  the export says how to configure Rasa for it (:mod:`app.formats.rasa_write`).
- Rows of another split than ``train``, or with a context (the turn before), are written in the
  list form with ``metadata: {split: ..., context: ...}`` and read back so (Rasa keeps an
  example's ``metadata`` and ignores what it does not use). A text a literal block cannot hold
  (control characters, line separators, spaces at its ends) is written in double quotes with YAML
  escapes (:func:`app.formats.safe_yaml.quoted`), so every text reads back exactly; a text that
  only looks like markup is escaped (:mod:`app.formats.rasa_entities`). The other sections of a
  Rasa project (``responses``, ``stories``, ...) are read past with a note (the kept file holds
  them); other keys are errors.
- Rows without an intent (the ``unlabelled`` split) have no place in the format and are not
  written.
- An intent's description is ``metadata: {description: ...}`` on its intent item (Rasa 3 allows
  ``metadata`` there and ignores what it does not know). An item with a description and no
  examples declares the intent (cold start).

Example:
    >>> rows = [Row("hi there", ("greet",)), Row("bye now", ("bye",))]
    >>> parse_rasa_yaml(dump_rasa_yaml(rows).encode()).rows == sorted(rows, key=lambda r: r.labels)
    True
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import yaml

from app.formats.common import (
    FormatError,
    ParsedFile,
    Row,
    add_description,
    check_context,
    check_intent,
    check_text,
    decode,
    finish,
)
from app.formats.rasa_entities import (
    add_example,
    add_lookup,
    read_markup,
)
from app.formats.rasa_write import write_rasa
from app.formats.safe_yaml import compose_yaml
from core.slots import EntitySpan, SlotData, SlotError
from storage.tables import SPLITS

RASA_SKIPPED_ITEMS = ("synonym", "regex")
RASA_OTHER_SECTIONS = frozenset(
    {
        "responses",
        "stories",
        "rules",
        "intents",
        "entities",
        "slots",
        "forms",
        "actions",
        "session_config",
        "e2e_actions",
        "test_stories",
    }
)
_STR = "tag:yaml.org,2002:str"


def _node_key(node: yaml.Node) -> str:
    return str(node.value) if isinstance(node, yaml.ScalarNode) else "?"


def parse_rasa_yaml(
    data: bytes, *, keep_entity_markup: bool = False, multi_intent_separator: str | None = "+"
) -> ParsedFile:
    """Read a Rasa NLU YAML file into rows.

    Args:
        data: the file's bytes (UTF-8).
        keep_entity_markup: keep ``[Berlin](city)`` as typed in the text instead of reading it
            as the text ``Berlin`` with an annotation.
        multi_intent_separator: split ``a+b`` intent names into several labels (None: never).

    Raises:
        FormatError: bad UTF-8 or YAML, unknown keys, empty or too long texts, duplicates; a
            merge key, nesting or aliases past the limits of :func:`compose_yaml`.

    Example:
        >>> doc = b'nlu:\\n- intent: greet\\n  examples: |\\n    - hi [Ana](name)\\n'
        >>> parsed = parse_rasa_yaml(doc)
        >>> parsed.rows[0].text, parsed.flattened_entities, parsed.slots.templates
        ('hi Ana', 1, {'greet': ['hi {name}']})
    """
    root = compose_yaml(decode(data))
    if not isinstance(root, yaml.MappingNode):
        raise FormatError("A Rasa NLU file is a mapping with an 'nlu:' list.")
    problems: list[tuple[int, str]] = []
    notes: list[str] = []
    found: list[tuple[int, str, Row]] = []
    flattened = 0
    slots = SlotData()
    skipped: dict[str, int] = {}
    synonyms: dict[str, list[str]] = {}  # a synonym map's value -> the ways it is written
    descriptions: dict[str, tuple[int, str]] = {}
    markups: dict[str, set[tuple[EntitySpan, ...]]] = {}  # a text -> each markup it is under
    nlu: yaml.Node | None = None
    for key_node, value_node in root.value:
        key = _node_key(key_node)
        if key == "nlu":
            nlu = value_node
        elif key == "version":
            version = _node_key(value_node)
            if not version.startswith("3"):
                notes.append(f"Rasa format version {version!r}; read as 3.x.")
        elif key in RASA_OTHER_SECTIONS:
            notes.append(f"Skipped the {key!r} section (not NLU training data).")
        else:
            problems.append((key_node.start_mark.line + 1, f"unknown key {key!r}"))
    if nlu is None:
        raise FormatError("The file has no 'nlu:' section.", problems)
    if not isinstance(nlu, yaml.SequenceNode):
        raise FormatError("'nlu:' must be a list.", [(nlu.start_mark.line + 1, "not a list")])
    for item in nlu.value:
        line = item.start_mark.line + 1
        if not isinstance(item, yaml.MappingNode):
            problems.append((line, "an nlu item must be a mapping such as '- intent: name'"))
            continue
        fields = {_node_key(k): v for k, v in item.value}
        kind = next((k for k in RASA_SKIPPED_ITEMS if k in fields), None)
        if "lookup" in fields and "intent" not in fields:
            _lookup(fields, slots, problems, line)
            continue
        if kind == "synonym" and "intent" not in fields:
            value = _node_key(fields["synonym"])
            examples = fields.get("examples")
            words = (
                [t.strip() for _, t, _, _ in _rasa_examples(examples, problems)] if examples else []
            )
            synonyms[value] = [*synonyms.get(value, []), *words]
        if "intent" not in fields:
            if kind is not None:
                skipped[kind] = skipped.get(kind, 0) + 1
            else:
                problems.append((line, f"unknown nlu item with keys {sorted(fields)}"))
            continue
        for k in fields:
            if k not in ("intent", "examples", "metadata"):
                problems.append((line, f"unknown key {k!r} in intent item"))
        if not isinstance(fields["intent"], yaml.ScalarNode):
            problems.append((line, "an intent name must be text, not a list or a mapping"))
            continue
        name = _node_key(fields["intent"])
        if multi_intent_separator and multi_intent_separator in name:
            labels = tuple(p.strip() for p in name.split(multi_intent_separator))
        else:
            labels = (name.strip(),)
        bad = [msg for n in labels if (msg := check_intent(n))]
        if bad or len(set(labels)) != len(labels):
            problems.append((line, bad[0] if bad else f"the same intent twice in {name!r}"))
            continue
        meta = fields.get("metadata")
        if isinstance(meta, yaml.MappingNode):
            for k, v in meta.value:
                if _node_key(k) == "description":
                    raw = v.value if isinstance(v, yaml.ScalarNode) and v.tag == _STR else None
                    if raw is None:
                        problems.append((line, "a description must be text"))
                    else:
                        add_description(descriptions, problems, line, labels, raw)
        examples = fields.get("examples")
        if examples is None:
            if labels[0] not in descriptions or len(labels) != 1:
                notes.append(f"Intent {name!r} has no examples.")
            continue
        for ex_line, raw, split, context in _rasa_examples(examples, problems):
            spans: list[EntitySpan] = []
            flat = raw.strip()
            if not keep_entity_markup:
                try:
                    flat, spans = read_markup(flat)
                except SlotError as exc:
                    problems.append((ex_line, str(exc)))
                    continue
            if (msg := check_text(flat)) is not None:
                problems.append((ex_line, msg))
                continue
            if flat != flat.strip():
                spans = []  # a value at the edge of the text: the stored text is trimmed
            flattened += len(spans)
            add_example(slots, flat.strip(), spans, labels)
            markups.setdefault(flat.strip(), set()).add(tuple(spans))
            found.append((ex_line, "", Row(flat.strip(), tuple(sorted(labels)), split, context)))
    rows = finish(found, problems, declared=len(descriptions))
    notes += _synonyms(slots, synonyms)
    if twice := [t for t, seen in markups.items() if len(seen) > 1]:
        shown = ", ".join(json.dumps(t, ensure_ascii=False) for t in twice[:5])
        more = f" and {len(twice) - 5} more" if len(twice) > 5 else ""
        notes.append(
            f"{len(twice)} text(s) are written twice under different entity markup: the project "
            f"keeps the first annotated one's (the Rasa file keeps both): {shown}{more}."
        )
    for kind, count in sorted(skipped.items()):
        notes.append(
            f"Kept {count} {kind} item(s) with the file: an export to Rasa writes them back."
        )
    if flattened:
        notes.append(
            f"Kept {flattened} entity annotation(s) such as [Berlin](city): the utterance is its "
            "text (Berlin), the annotation feeds the slot book and the intent's templates."
        )
    return ParsedFile(
        rows, notes, flattened, {n: d for n, (_, d) in descriptions.items()}, slots=slots
    )


def _lookup(
    fields: dict[str, yaml.Node], slots: SlotData, problems: list[tuple[int, str]], line: int
) -> None:
    """A ``lookup:`` table's values join the slot book."""
    examples = fields.get("examples")
    if examples is None:
        problems.append((line, "a lookup table needs 'examples'"))
        return
    try:
        add_lookup(
            slots,
            _node_key(fields["lookup"]),
            [t for _, t, _, _ in _rasa_examples(examples, problems)],
        )
    except SlotError as exc:
        problems.append((line, str(exc)))


Example = tuple[int, str, str, str]  # (line, text, split, context)


def _rasa_examples(node: yaml.Node, problems: list[tuple[int, str]]) -> list[Example]:
    """``(line, text, split, context)`` of each example in an ``examples:`` value."""
    out: list[Example] = []
    if isinstance(node, yaml.ScalarNode):
        # Literal/folded blocks start on the line after the indicator.
        first = node.start_mark.line + (2 if node.style in ("|", ">") else 1)
        for i, raw in enumerate(str(node.value).split("\n")):
            stripped = raw.strip()
            if not stripped:
                continue
            if not stripped.startswith("-"):
                problems.append((first + i, f"an example line must start with '- ': {raw[:40]!r}"))
                continue
            out.append((first + i, stripped[1:], "train", ""))
        return out
    if not isinstance(node, yaml.SequenceNode):
        problems.append((node.start_mark.line + 1, "'examples' must be a block or a list"))
        return out
    for item in node.value:
        line = item.start_mark.line + 1
        if isinstance(item, yaml.ScalarNode):
            out.append((line, str(item.value), "train", ""))
            continue
        if not isinstance(item, yaml.MappingNode):
            problems.append((line, "an example must be text or a mapping with 'text'"))
            continue
        fields = {_node_key(k): v for k, v in item.value}
        extra = set(fields) - {"text", "metadata"}
        text = fields.get("text")
        if extra or not (isinstance(text, yaml.ScalarNode) and text.tag == _STR):
            problems.append((line, f"an example needs 'text' (unknown keys {sorted(extra)})"))
            continue
        meta = fields.get("metadata")
        found = (
            {_node_key(k): v for k, v in meta.value} if isinstance(meta, yaml.MappingNode) else {}
        )
        split = _node_key(found["split"]) if "split" in found else "train"
        if split not in SPLITS or split == "unlabelled":
            problems.append((line, f"unknown split {split!r} in metadata"))
            continue
        said = found.get("context")
        given = said.value if isinstance(said, yaml.ScalarNode) and said.tag == _STR else said
        context, problem = check_context(given)
        if problem is not None:
            problems.append((line, problem))
            continue
        out.append((line, str(text.value), split, context))
    return out


def dump_rasa_yaml(
    rows: Iterable[Row],
    descriptions: dict[str, str] | None = None,
    *,
    multi_intent_separator: str = "+",
    slots: SlotData | None = None,
) -> str:
    """Write labelled rows as Rasa NLU YAML (``version: "3.1"``); unlabelled rows are left out.
    An intent's description goes in its item's ``metadata`` (a described intent without rows
    gets an item of its own). With ``slots``, annotated texts are written with their entity
    markup, and the slot values and synonyms no annotation carries as ``lookup:`` and
    ``synonym:`` items (:func:`app.formats.rasa_write.write_rasa`, which also writes into the
    file a project was imported from).

    Example:
        >>> print(dump_rasa_yaml([Row("hello", ("greet",))]), end="")
        version: "3.1"
        nlu:
        - intent: greet
          examples: |
            - hello
    """
    text, _ = write_rasa(rows, descriptions, slots, separator=multi_intent_separator)
    return text


def _synonyms(slots: SlotData, synonyms: dict[str, list[str]]) -> list[str]:
    """A file's ``synonym:`` maps as the synonyms of the slot values their annotations name (an
    annotation whose ``value``, or text, is the map's value) or a ``lookup:`` table lists; a
    note on those none names."""
    entities: dict[str, set[str]] = {}
    for text, spans in slots.entities.items():
        for span in spans:
            said = span.get("value") or text[int(span["start"]) : int(span["end"])].strip()
            entities.setdefault(str(said), set()).add(str(span["entity"]))
    for entity, values in slots.book.items():  # a value of a lookup: table
        for value in values:
            entities.setdefault(value, set()).add(entity)
    alone = []
    for value, words in synonyms.items():
        for entity in sorted(entities.get(value, ())):
            slots.add_value(entity, value, words)
        if value not in entities:
            alone.append(value)
    if not alone:
        return []
    return [
        f"{len(alone)} synonym map(s) name a value no annotation uses "
        f"({', '.join(repr(v) for v in alone[:5])}): kept with the file, not in the slot book."
    ]
