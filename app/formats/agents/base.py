"""What every platform agent format shares: the intents a format reads out of an agent, how their
names become ours, rows and descriptions, and the plan an export applies to an agent.

A format reads an agent into an :class:`AgentDoc`: its intents (platform name, description,
whether it is the platform's fallback, training phrases), each with the file or JSON path it came
from. :func:`to_parsed` turns that into rows, with every rule of :mod:`app.formats.common`:

- a fallback intent (and one named ``out_of_scope`` in any way, ``Out Of Scope`` too) is our
  reserved ``out_of_scope`` label;
- a platform name that cannot be an intent name here is mapped (``|`` to ``/``, invisible
  characters dropped, NFC, at most 120 characters) and the mapping is reported; an export writes
  the platform's name back;
- two names that are one name here (one key: case, width, invisible characters, separators,
  TR39 look-alikes, see :mod:`storage.names`) are one intent, the first one's, and the mapping is
  reported; an import maps them onto the project's intents the same way;
- a text under several intents is one multi-label row.

An export (:func:`app.formats.agents.export.plan_export`) reads the kept agent the same way, so each of our intents finds
the platform intent it came from: what changed in the project (phrases, descriptions, intents added
or deleted) is applied, everything else is left as it was.

Example:
    >>> doc = AgentDoc([PlatformIntent("greet", "intents/greet.json", phrases=[("p", "hi", "train")])])
    >>> to_parsed(doc, "Demo").rows
    [NewUtterance(text='hi', labels=('greet',), split='train', context='')]
"""

from __future__ import annotations

import json
import unicodedata
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from app.formats.common import (
    FormatError,
    ParsedFile,
    Row,
    check_description,
    check_text,
    decode,
    finish,
    json_depth_over,
)
from app.formats.rasa_entities import add_example
from core.retrieval.scope import OUT_OF_SCOPE
from core.slots import EntitySpan, SlotData, SlotError, check_slot_name, check_values
from storage.names import NameIndex, is_ignorable, name_key, name_problem
from storage.texts import MAX_NAME_CHARS, nfc

# Deepest nesting of an agent's JSON files (a Dialogflow CX page's rich responses nest ~12 deep).
MAX_AGENT_NESTING = 64
SHOW_NAMES = 8
_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
# Fixed namespace for the ids of phrases and intents an export adds (the same text, the same id).
_IDS = uuid.UUID("5d1c6a52-8f3e-4a55-9a43-6a1d3b8e2f10")


def new_id(*parts: str) -> str:
    """A stable id for something an export adds (same inputs, same id)."""
    return str(uuid.uuid5(_IDS, "\x1f".join(parts)))


@dataclass
class PlatformIntent:
    """One intent as the platform names it. ``phrases``: ``(where, text, split)``; ``ours``:
    the name it had in the project that exported it, where the platform refused that one (an
    export's name map, e.g. Lex's ``intent-studio-names.json``)."""

    name: str
    where: str
    description: str = ""
    fallback: bool = False
    phrases: list[tuple[str, str, str]] = field(default_factory=list)
    ours: str = ""
    # a phrase's entity annotations (by its ``where``), offsets in its text as read
    spans: dict[str, list[EntitySpan]] = field(default_factory=dict)


@dataclass
class AgentDoc:
    """The intents of an agent in the language read, and what the reader noticed; ``values``:
    its entity types' values and their synonyms (entity -> value -> synonyms)."""

    intents: list[PlatformIntent]
    language: str = ""
    notes: list[str] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)
    values: dict[str, dict[str, list[str]]] = field(default_factory=dict)


def load_json(data: bytes, where: str) -> Any:
    """The JSON value of a file, after the size and nesting limits.

    Raises:
        FormatError: not UTF-8, not JSON (with its line), or nested too deep.
    """
    text = decode(data, where)
    if json_depth_over(text, MAX_AGENT_NESTING):
        raise FormatError(
            f"{where} nests lists and objects deeper than {MAX_AGENT_NESTING} levels."
        )
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(
            f"{where} is not valid JSON.",
            [(exc.lineno, f"{where}: {exc.msg} (column {exc.colno})")],
        ) from exc
    except RecursionError as exc:  # a second fence behind the depth check
        raise FormatError(f"{where} nests too deep.") from exc


def dump_json(value: Any) -> bytes:
    """How an export writes a JSON file it changed: two-space indent, keys in their order."""
    return json.dumps(value, indent=2, ensure_ascii=False).encode("utf-8")


def same_or_dumped(value: Any, original: bytes | None) -> bytes:
    """The original bytes when ``value`` is what they hold (an untouched file stays byte for
    byte), else ``value`` written by :func:`dump_json`."""
    if original is not None:
        try:
            if json.loads(original.decode("utf-8-sig")) == value:
                return original
        except (ValueError, RecursionError):
            pass
    return dump_json(value)


def text_key(text: str) -> str:
    """A phrase's text as a row holds it (NFC, trimmed): how an export finds a kept phrase."""
    return nfc(text).strip()


def as_text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def load_intent(
    files: dict[str, bytes], path: str, key: str, problems: list[tuple[int, str]]
) -> tuple[Any, str] | None:
    """An intent's JSON file and the name it holds under ``key``, for a format that keeps each
    intent in a file of its own; None when the file is no JSON or names no intent (the problem
    noted in ``problems``)."""
    try:
        obj = load_json(files[path], path)
    except FormatError as exc:
        problems.extend(exc.problems or [(0, exc.summary)])
        return None
    name = as_text(obj.get(key)) if isinstance(obj, dict) else None
    if name is None:
        problems.append((0, f"{path}: an intent needs a '{key}' string"))
        return None
    return obj, name


def pick_language(
    asked: str | None,
    default: str,
    available: Iterable[str],
    problems: list[tuple[int, str]],
    what: str = "language",
) -> str:
    """The language to read: ``asked`` (as the agent spells it) when the agent has it, else its
    ``default``; asking for one it lacks is a problem naming those it has.

    Example:
        >>> pick_language("DE", "en", ["en", "de"], []), pick_language(None, "en", ["en"], [])
        ('de', 'en')
    """
    if asked is None or not asked.strip():
        return default
    have = {a.casefold(): a for a in [default, *available] if a}
    if asked.strip().casefold() in have:
        return have[asked.strip().casefold()]
    problems.append(
        (0, f"the agent has no {what} {asked!r}; it has {', '.join(sorted(set(have.values())))}")
    )
    return default


def our_name(platform: str, fallback: bool = False) -> str:
    """The intent name a platform intent has here (see the module docstring).

    Example:
        >>> our_name("pay|bill"), our_name("Default Fallback Intent", fallback=True)
        ('pay/bill', 'out_of_scope')
    """
    if fallback or name_key(platform) == name_key(OUT_OF_SCOPE):
        return OUT_OF_SCOPE
    clean = nfc(platform).replace("|", "/")
    clean = "".join(
        c for c in clean if unicodedata.category(c) not in _HIDDEN and not is_ignorable(c)
    )
    return clean.strip()[:MAX_NAME_CHARS].strip()


def intent_names(doc: AgentDoc, problems: list[tuple[int, str]], notes: list[str]) -> list[str]:
    """Our name of each of ``doc``'s intents (one written like an earlier one is that one);
    repeated and invalid names are problems."""
    names = []
    seen: dict[str, PlatformIntent] = {}
    index = NameIndex()
    mapped, same = [], []
    for intent in doc.intents:
        fallback = intent.fallback or our_name(intent.name) == OUT_OF_SCOPE
        intent.fallback = fallback
        ours = (intent.ours if not fallback else "") or our_name(intent.name, fallback)
        names.append(ours)
        if fallback:
            continue
        if intent.name in seen:
            problems.append((0, f"{intent.where}: intent {intent.name!r} is defined twice"))
            continue
        seen[intent.name] = intent
        if (msg := name_problem(ours)) is not None:
            problems.append((0, f"{intent.where}: intent name {intent.name[:60]!r}: {msg}"))
            continue
        if (first := index.find(ours)) is not None:
            names[-1] = first
            same.append(f"{intent.name!r} ({intent.where}) → {first!r}")
            continue
        index.add(ours)
        if ours != intent.name and not intent.ours:
            mapped.append(f"{intent.name!r} -> {ours!r}")
    if same:
        more = f" and {len(same) - SHOW_NAMES} more" if len(same) > SHOW_NAMES else ""
        notes.append(
            f"{len(same)} intent(s) are another intent written another way (case, width, "
            "invisible characters, separators or look-alike letters) and were read as that "
            f"intent: {', '.join(same[:SHOW_NAMES])}{more}."
        )
    if mapped:
        more = f" and {len(mapped) - SHOW_NAMES} more" if len(mapped) > SHOW_NAMES else ""
        notes.append(
            f"{len(mapped)} intent name(s) are not valid here as they are and were mapped (an "
            f"export writes the platform's name back): {', '.join(mapped[:SHOW_NAMES])}{more}."
        )
    return names


def to_parsed(doc: AgentDoc, title: str) -> ParsedFile:
    """Rows and descriptions of an agent's intents (see the module docstring).

    Raises:
        FormatError: every problem the format and these rules found; nothing is returned then.
    """
    problems = list(doc.problems)
    notes = list(doc.notes)
    names = intent_names(doc, problems, notes)
    merged: dict[str, tuple[int, str, str, list[str]]] = {}  # text -> (n, where, split, labels)
    descriptions: dict[str, str] = {}
    spans: dict[str, list[EntitySpan]] = {}  # text -> the annotations of its first phrase
    for intent, name in zip(doc.intents, names, strict=True):
        if intent.description and not intent.fallback:
            if (msg := check_description(intent.description)) is not None:
                problems.append((0, f"{intent.where}: {msg}"))
            else:
                descriptions[name] = " ".join(intent.description.split())
        for where, raw, split in intent.phrases:
            if (msg := check_text(raw)) is not None:
                problems.append((0, f"{where}: {msg}"))
                continue
            text = text_key(raw)
            if text not in merged:
                merged[text] = (len(merged), where, split, [name])
                spans[text] = _shifted(raw, intent.spans.get(where, []))
            elif name not in merged[text][3]:
                merged[text][3].append(name)
    found = [
        (0, w, Row(t, tuple(sorted(labels)), split)) for t, (_, w, split, labels) in merged.items()
    ]
    rows = finish(found, problems, declared=len(descriptions))
    multi = sum(1 for r in rows if len(r.labels) > 1)
    if multi:
        notes.append(f"{multi} phrase(s) are under several intents: read as multi-label.")
    n_oos = sum(1 for r in rows if OUT_OF_SCOPE in r.labels)
    if n_oos:
        notes.append(f"{n_oos} phrase(s) of the fallback were read as {OUT_OF_SCOPE!r}.")
    lang = f" in {doc.language}" if doc.language else ""
    notes.insert(0, f"The {title} has {len(doc.intents)} intent(s){lang}.")
    slots = _slot_data(rows, spans, doc.values, notes)
    return ParsedFile(rows, notes, slots.n_spans, descriptions, slots.data, format=title)


@dataclass
class _Slots:
    data: SlotData
    n_spans: int


def _slot_data(
    rows: list[Row],
    spans: dict[str, list[EntitySpan]],
    values: dict[str, dict[str, list[str]]],
    notes: list[str],
) -> _Slots:
    """The annotations, values and synonyms an agent brings, as a project keeps them (the
    values an annotation writes join the slot book, its example the intent's templates); a
    note naming those that cannot be kept (an entity name the slot book refuses)."""
    data = SlotData()
    refused: set[str] = set()
    n = 0
    odd: list[str] = []  # values and synonyms no slot value can be (a brace, a line break, ...)
    for entity, by_value in values.items():
        if check_slot_name_ok(entity, refused):
            for value, synonyms in by_value.items():
                kept = is_value(value)  # a value refused takes its synonyms with it
                lost = [w for w in synonyms if not is_value(w)] if kept else [value, *synonyms]
                odd += [f"{entity}: {w[:40]!r}" for w in lost]
                if is_value(value):
                    data.add_value(entity, value, [w for w in synonyms if is_value(w)])
    for row in rows:
        found = [s for s in spans.get(row.text, []) if check_slot_name_ok(s.entity, refused)]
        if found:
            add_example(data, row.text, found, [lab for lab in row.labels if lab != OUT_OF_SCOPE])
            n += len(found)
    if n:
        notes.append(
            f"Kept {n} entity annotation(s) with their entity types: the slot book holds their "
            "values, an export writes them where the format has a place for them."
        )
    if refused:
        notes.append(
            f"Left out the annotations and values of {len(refused)} entity type(s) whose name "
            f"is no slot name here (letters, digits, _ - .): {', '.join(sorted(refused)[:8])} "
            "(the agent keeps them)."
        )
    if odd := list(dict.fromkeys(odd)):
        more = f" and {len(odd) - 8} more" if len(odd) > 8 else ""
        notes.append(
            f"Left out of the slot book {len(odd)} entity value(s) and synonym(s) no slot value "
            "can be, or whose value cannot (empty, a brace or a line break, over 200 "
            "characters): "
            f"{', '.join(odd[:8])}{more} (the agent keeps them; other formats leave them out)."
        )
    return _Slots(data, n)


def check_slot_name_ok(name: str, refused: set[str]) -> bool:
    """Whether ``name`` can be a slot here (else it joins ``refused``)."""
    try:
        check_slot_name(name)
    except SlotError:
        refused.add(name)
        return False
    return True


def is_value(value: str) -> bool:
    """Whether a text can be a slot value (:func:`core.slots.check_values`' rule)."""
    try:
        check_values("x", [value])
    except SlotError:
        return False
    return True


def _shifted(raw: str, spans: list[EntitySpan]) -> list[EntitySpan]:
    """Spans on a phrase's raw text moved onto its stored text (NFC, trimmed); dropped where
    they no longer fit it."""
    text = text_key(raw)
    if not spans:
        return []
    lead = len(raw) - len(raw.lstrip())
    out = []
    for s in spans:
        start, end = s.start - lead, s.end - lead
        if 0 <= start < end <= len(text) and raw[s.start : s.end] == text[start:end]:
            out.append(replace(s, start=start, end=end))
    return out


def name_with(
    allowed: Callable[[str], bool], fill: str = "_", limit: int = 100
) -> Callable[[str], str]:
    """A platform's name rule: characters it does not allow become ``fill`` (runs of them one),
    at most ``limit`` characters, never empty."""

    def rule(name: str) -> str:
        out: list[str] = []
        for c in name:
            if allowed(c):
                out.append(c)
            elif out and out[-1] != fill:
                out.append(fill)
        return "".join(out).strip(fill)[:limit].strip(fill) or "intent"

    return rule
