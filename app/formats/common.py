"""What every import format shares: decoding, limits, the row checks and the error type.

A file is validated completely first; any problem raises :class:`FormatError` listing
``(line, message)`` pairs and no row is returned. Each rule exists once, here: a file is UTF-8 (a
BOM is dropped) of at most :data:`MAX_FILE_BYTES`; a text is visible, at most
:data:`~storage.utterances.MAX_TEXT_CHARS` long and holds no NUL; an intent name follows
:func:`storage.names.label_problem` (a label written another way than the project's intent, with
an invisible character even, is mapped onto it when imported: :mod:`storage.imports`); texts and
names are NFC; a file holds at least one and at most :data:`MAX_ROWS` rows.

Real files repeat themselves (a test set with one text twice, chat logs full of "hi"): a repeated
text is not a problem. :func:`merge_repeats` keeps it once, with every intent any of its rows
gives it: the one rule of every format, since an agent's phrase under two intents and an intent
file's line in two files are already one multi-label row (the data model is multi-label; whether
a project predicts so is decided by its share of such rows, :func:`core.multilabel.rule.is_multilabel`).
What was merged is reported, never dropped silently.

Example:
    >>> rows, notes = merge_repeats([Row("hi", ("greet",)), Row("hi", ("greet",)), Row("hi", ("bye",))])
    >>> [r.labels for r in rows], notes
    ([('bye', 'greet')], ['Merged 1 repeated utterance(s) with the same intents.', "1 utterance(s) appear with different intents; each was imported once with all of them (multi-label): 'hi' (greet + bye)."])
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from app.config import MAX_UPLOAD_BYTES
from core.slots import SlotData
from storage.errors import StorageError
from storage.names import label_problem
from storage.projects import validate_description
from storage.texts import MAX_NAME_CHARS, nfc, validate_context
from storage.utterances import MAX_TEXT_CHARS, NewUtterance, is_blank

Row = NewUtterance
MAX_FILE_BYTES = MAX_UPLOAD_BYTES
MAX_ROWS = 200_000
# Most columns a CSV header may have (a file needs at most 5: text, label(s), split, context,
# description); checked on the header, before any row is read: a 100,000-column header with
# 1,000 rows (0.7 MB) took 24 s of CPU to read.
MAX_COLUMNS = 64
MAX_INTENT_CHARS = MAX_NAME_CHARS
# Deepest nesting of lists and mappings a JSONL line or YAML file may have (a Rasa file needs 6).
MAX_NESTING = 20
SHOW_PROBLEMS = 8


@dataclass
class FormatError(ValueError):
    """A file that cannot be imported: a summary and ``(line, message)`` problems (line 0: the
    whole file). Nothing was imported."""

    summary: str
    problems: list[tuple[int, str]] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [self.summary]
        for line, msg in self.problems[:SHOW_PROBLEMS]:
            lines.append(f"  line {line}: {msg}" if line else f"  {msg}")
        if len(self.problems) > SHOW_PROBLEMS:
            lines.append(f"  ... and {len(self.problems) - SHOW_PROBLEMS} more problem(s)")
        lines.append("Nothing was imported.")
        return "\n".join(lines)


@dataclass(frozen=True)
class AgentSource:
    """A platform agent as imported (``format``: an agent format's name, ``content``: its files,
    a zip or a JSON file; ``language``: the one read, ``""`` for the agent's default), kept so
    that an export writes back what the app does not model."""

    format: str
    content: bytes
    language: str = ""


@dataclass(frozen=True)
class ParsedFile:
    """Rows read from a file, with what was changed or skipped on the way, and the slot book,
    templates and entity annotations it carries (Rasa entities and lookup tables). ``format``
    names the format the file was read as; ``agent`` is a platform agent's source (see
    :mod:`app.formats.agents`)."""

    rows: list[Row]
    notes: list[str] = field(default_factory=list)
    flattened_entities: int = 0
    # intent -> its description, where the file gave one
    descriptions: dict[str, str] = field(default_factory=dict)
    slots: SlotData = field(default_factory=SlotData)
    format: str = ""
    agent: AgentSource | None = None


def check_size(n_bytes: int, where: str = "The file") -> None:
    """Refuse more than :data:`MAX_FILE_BYTES` (before reading, where the size is known).

    Raises:
        FormatError: over the limit.
    """
    if n_bytes > MAX_FILE_BYTES:
        raise FormatError(
            f"{where} is {n_bytes / 2**20:.1f} MB; the limit is {MAX_FILE_BYTES / 2**20:.0f} MB. "
            "Split it into smaller files."
        )


def decode(data: bytes, where: str = "The file") -> str:
    """The text of a UTF-8 file (a BOM dropped), after the size limit.

    Raises:
        FormatError: too large, or not UTF-8 (with the line of the first bad byte).

    Example:
        >>> decode("\\ufeffhé".encode())
        'hé'
    """
    check_size(len(data), where)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise FormatError(
            f"{where} is not valid UTF-8.", [(line, f"invalid byte at offset {exc.start}")]
        ) from exc


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def json_depth_over(text: str, limit: int = MAX_NESTING) -> bool:
    """Whether a JSON text nests lists and objects deeper than ``limit`` (strings and their
    brackets skipped), found before parsing it: the parser would recurse that deep.

    Example:
        >>> json_depth_over("[[1]]", 1), json_depth_over('["[[["]', 1)
        (True, False)
    """
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for token in _JSON_TOKEN.finditer(text):
        t = token.group()
        if t in "[{":
            depth += 1
            if depth > limit:
                return True
        elif t in "]}":
            depth -= 1
    return False


def check_text(text: str) -> str | None:
    """A problem with an utterance text, or None."""
    if is_blank(text):
        return "empty text"
    if len(text) > MAX_TEXT_CHARS:
        return f"text is {len(text)} characters (limit {MAX_TEXT_CHARS})"
    if "\x00" in text:
        return "text contains a NUL character"
    return None


def check_context(context: object) -> tuple[str, str | None]:
    """An utterance's context (the turn before it) as stored (``""``: none), and a problem with
    it or None: the rules of :func:`storage.texts.validate_context`."""
    if context is not None and not isinstance(context, str):
        return "", "context must be a string"
    try:
        return validate_context(context), None
    except StorageError as exc:
        return "", str(exc).rstrip(".")


def check_intent(name: str) -> str | None:
    """A problem with an intent name, or None: the rules of
    :func:`storage.names.label_problem`, said per line."""
    if not name:
        return "empty intent name"
    if not isinstance(name, str):
        return "an intent name must be a string"
    if (msg := label_problem(nfc(name).strip())) is not None:
        return f"intent name {name[:60]!r}: {msg.rstrip('.')}"
    return None


def check_description(text: str) -> str | None:
    """A problem with an intent description, or None (the storage rule, said per line)."""
    try:
        validate_description(text)
    except StorageError as exc:
        return str(exc)
    return None


def add_description(
    descriptions: dict[str, tuple[int, str]],
    problems: list[tuple[int, str]],
    line: int,
    labels: tuple[str, ...] | list[str],
    raw: object,
) -> None:
    """Record a row's (or an intent item's) description of its one intent, or the problem with
    it: a description belongs to exactly one intent, and an intent has one description (the same
    text repeated on every row of it is fine)."""
    text = " ".join(str(raw).split()) if raw not in (None, "") else ""
    if not text:
        return
    if len(labels) != 1:
        problems.append((line, "a description needs exactly one intent on its row"))
        return
    if (msg := check_description(text)) is not None:
        problems.append((line, msg))
        return
    seen = descriptions.get(labels[0])
    if seen is None:
        descriptions[labels[0]] = (line, text)
    elif seen[1] != text:
        problems.append((line, f"intent {labels[0]!r} has another description on line {seen[0]}"))


def finish(
    found: list[tuple[int, str, Row]], problems: list[tuple[int, str]], *, declared: int = 0
) -> list[Row]:
    """The rows of a completely read file (repeats included: see :func:`merge_repeats`), or
    FormatError listing every problem.

    Args:
        found: ``(line, where, row)`` per row read; ``where`` prefixes messages (a file name
            and ``": "`` for a folder of files, else ``""``).
        problems: ``(line, message)`` found while reading.
        declared: intents the file declares by a description alone (a file of only those is
            not empty).

    Raises:
        FormatError: any problem, no rows, or more than :data:`MAX_ROWS`.
    """
    if problems:
        problems.sort(key=lambda p: p[0])
        raise FormatError(f"{len(problems)} problem(s) in the file.", problems)
    if not found and not declared:
        raise FormatError("The file has no rows: no utterances to import.")
    if len(found) > MAX_ROWS:
        raise FormatError(f"The file has {len(found)} rows; the limit is {MAX_ROWS}.")
    return [_nfc_row(row) for _, _, row in found]


def _nfc_row(row: Row) -> Row:
    """``row`` with its text, context and intents in NFC, as they are stored (so ``café`` typed
    two ways is one repeated text for :func:`merge_repeats`)."""
    labels = tuple(nfc(n) for n in row.labels)
    return Row(nfc(row.text), labels, row.split, nfc(row.context))


SHOW_CONFLICTS = 5


def merge_repeats(rows: list[Row]) -> tuple[list[Row], list[str]]:
    """Keep each text once, in file order, with the union of the intents its rows give it (see
    the module docstring). Returns (rows, notes for the person importing).

    A repeat that adds no intent is merged and counted; one that adds intents is listed. A text
    in two splits (or with two contexts) keeps its first labelled row's split (and its first
    context), and is listed too: one utterance is in one split.
    """
    first: dict[str, Row] = {}
    added: dict[str, list[tuple[str, ...]]] = {}  # text -> the intents each repeat added
    moved: dict[str, list[str]] = {}  # text -> the other splits or contexts its repeats had
    merged = 0
    for row in rows:
        kept = first.get(row.text)
        if kept is None:
            first[row.text] = row
            continue
        new = tuple(n for n in row.labels if n not in kept.labels)
        split = row.split if row.labels and not kept.labels else kept.split
        if new and kept.labels:
            added.setdefault(row.text, []).append(new)
        elif not new:
            merged += 1
        labels = tuple(sorted((*kept.labels, *new)))
        kept = first[row.text] = Row(row.text, labels, split, kept.context or row.context)
        other = [f"{row.split} split"] if row.labels and row.split != kept.split else []
        other += [f"context {row.context[:40]!r}"] if row.context not in ("", kept.context) else []
        if other:
            moved.setdefault(row.text, []).extend(other)
    notes = [f"Merged {merged} repeated utterance(s) with the same intents."] if merged else []
    if added:
        notes.append(
            f"{len(added)} utterance(s) appear with different intents; each was imported once "
            "with all of them (multi-label): "
            + _listed(added, lambda t, a: " + ".join(", ".join(n) for n in [_first(rows, t), *a]))
            + "."
        )
    if moved:
        notes.append(
            f"{len(moved)} utterance(s) appear in another split or with another context too; each "
            "kept its first: "
            + _listed(moved, lambda t, o: f"{first[t].split}; also {', '.join(dict.fromkeys(o))}")
            + "."
        )
    return list(first.values()), notes


def _first(rows: list[Row], text: str) -> tuple[str, ...]:
    """The intents of the first labelled row of ``text``."""
    return next((r.labels for r in rows if r.text == text and r.labels), ())


def _listed(found: dict[str, list[Any]], say: Any) -> str:
    """The first :data:`SHOW_CONFLICTS` texts of ``found``, each with ``say(text, its list)``."""
    shown = "; ".join(f"{t[:60]!r} ({say(t, v)})" for t, v in list(found.items())[:SHOW_CONFLICTS])
    more = len(found) - SHOW_CONFLICTS
    return shown + (f" and {more} more" if more > 0 else "")
