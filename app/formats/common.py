"""What every import format shares: decoding, limits, the row checks and the error type.

A file is validated completely first; any problem raises :class:`FormatError` listing
``(line, message)`` pairs and no row is returned. Each rule exists once, here: a file is UTF-8 (a
BOM is dropped) of at most :data:`MAX_FILE_BYTES`; a text is visible, at most
:data:`~storage.utterances.MAX_TEXT_CHARS` long and holds no NUL; an intent name is non-empty, at
most :data:`MAX_INTENT_CHARS` long and holds no ``|``; a text appears once per file; a file holds
at least one and at most :data:`MAX_ROWS` rows.

Example:
    >>> finish([(2, "", Row("hi", ("greet",))), (3, "", Row("hi", ("bye",)))], [])
    Traceback (most recent call last):
    ...
    app.formats.common.FormatError: 1 problem(s) in the file.
      line 3: duplicate of line 2: 'hi'
    Nothing was imported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from storage.utterances import MAX_TEXT_CHARS, NewUtterance, is_blank

Row = NewUtterance
MAX_FILE_BYTES = 25 * 1024 * 1024
MAX_ROWS = 200_000
MAX_INTENT_CHARS = 120
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
class ParsedFile:
    """Rows read from a file, with what was changed or skipped on the way."""

    rows: list[Row]
    notes: list[str] = field(default_factory=list)
    flattened_entities: int = 0


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


def check_text(text: str) -> str | None:
    """A problem with an utterance text, or None."""
    if is_blank(text):
        return "empty text"
    if len(text) > MAX_TEXT_CHARS:
        return f"text is {len(text)} characters (limit {MAX_TEXT_CHARS})"
    if "\x00" in text:
        return "text contains a NUL character"
    return None


def check_intent(name: str) -> str | None:
    """A problem with an intent name, or None."""
    if not name:
        return "empty intent name"
    if len(name) > MAX_INTENT_CHARS:
        return f"intent name longer than {MAX_INTENT_CHARS} characters"
    if "|" in name:
        return f"intent name {name!r} contains '|'"
    return None


def finish(found: list[tuple[int, str, Row]], problems: list[tuple[int, str]]) -> list[Row]:
    """The rows of a completely read file, or FormatError listing every problem.

    Args:
        found: ``(line, where, row)`` per row read; ``where`` prefixes messages (a file name
            and ``": "`` for a folder of files, else ``""``).
        problems: ``(line, message)`` found while reading; duplicates are added here.

    Raises:
        FormatError: any problem, the same text twice, no rows, or more than :data:`MAX_ROWS`.
    """
    seen: dict[str, tuple[int, str]] = {}
    for line, where, row in found:
        if row.text in seen:
            first_line, first_where = seen[row.text]
            at = (
                f"{first_where} line {first_line}" if first_where != where else f"line {first_line}"
            )
            problems.append((line, f"{where}duplicate of {at}: {row.text[:60]!r}"))
        else:
            seen[row.text] = (line, where)
    if problems:
        problems.sort(key=lambda p: p[0])
        raise FormatError(f"{len(problems)} problem(s) in the file.", problems)
    if not found:
        raise FormatError("The file has no rows: no utterances to import.")
    if len(found) > MAX_ROWS:
        raise FormatError(f"The file has {len(found)} rows; the limit is {MAX_ROWS}.")
    return [row for _, _, row in found]
