"""A quote left open in a CSV file: where it opened, and the rows it swallowed.

A quoted cell may hold line breaks (a text of several lines), so a ``"`` that is never closed
does not break a CSV parser: it reads on, through the rows that follow, until the next ``"``, and
a file of 1,000 rows imports as fewer rows, one of them giant. :func:`app.formats.tabular.read_csv`
refuses such a file, naming the line where the quote opened, by three rules:

1. the file ends inside a quoted cell (the parser in strict mode says so);
2. a quoted cell's closing quote is followed by more text (strict mode again: the ``"`` that
   "closed" it was the opening quote of a later cell, or a quote inside a later text);
3. a quoted cell spans lines and one of those lines reads, on its own, as a complete row of the
   file: as many cells as the header, and an intent in the label column that other rows of the
   file use (a text that merely has line breaks and commas does not: its lines do not end in an
   intent of the file).

Example:
    >>> lines = 'text,label\\nhi,greet\\n"lost my card,lost\\nbye,bye\\n'.splitlines(True)
    >>> open_quote(lines, 3)
    (3, None)
    >>> row_inside("lost my card,lost\\nbye,bye\\n", width=2, label_at=1, intents={"bye"})
    'bye,bye'
"""

from __future__ import annotations

import csv
import re

BREAK = re.compile(r"\r\n|\r|\n")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")


def file_lines(text: str, *, keepends: bool = False) -> list[str]:
    """The lines of a CSV or JSONL file: split at CR, LF and CRLF only (``str.splitlines`` also
    splits at NEL, VT, FF, file separators and U+2028/2029, characters a text may hold).

    Example:
        >>> file_lines("a\\x85b\\r\\nc\\n"), file_lines("a\\nb", keepends=True)
        (['a\\x85b', 'c'], ['a\\n', 'b'])
    """
    found = [m.group() for m in _LINE.finditer(text) if m.group()]
    return found if keepends else [BREAK.sub("", line) for line in found]


def line_breaks(cell: str) -> int:
    """How many line breaks a cell holds (``\\r\\n`` counts once, as the parser counts lines)."""
    return len(BREAK.findall(cell)) if ("\n" in cell or "\r" in cell) else 0


def open_quote(lines: list[str], start: int) -> tuple[int, int | None]:
    """Where the quoted cell that does not close properly opened, scanning the record that
    begins on line ``start`` (1-based; ``lines`` keep their line ends), and the line of the quote
    that "closed" it only to be followed by more text (None: the file ends inside the cell).
    ``(start, None)`` when the record holds no such cell."""
    rest = "".join(lines[start - 1 :])
    i, field_start = 0, True
    while i < len(rest):
        c = rest[i]
        if c == '"' and field_start:
            opened = start + line_breaks(rest[:i])
            j = i + 1
            while True:
                j = rest.find('"', j)
                if j < 0:
                    return opened, None  # the file ends inside the cell
                if rest.startswith('"', j + 1):
                    j += 2  # a doubled quote: part of the text
                    continue
                break
            if rest[j + 1 : j + 2] not in (",", "\r", "\n", ""):
                return opened, start + line_breaks(rest[:j])  # "closed", then more text
            i, field_start = j + 1, False
            continue
        if c in "\r\n":
            return start, None  # the record ended with every quote closed
        field_start = c == ","
        i += 1
    return start, None


def row_inside(cell: str, *, width: int, label_at: int, intents: set[str]) -> str | None:
    """The first line of a multi-line ``cell`` that reads as a complete row of the file: exactly
    ``width`` cells, a text, and in cell ``label_at`` intents that are all among ``intents``
    (those other rows of the file use). None when no line does."""
    for piece in BREAK.split(cell):
        if not piece.strip():
            continue
        try:
            cells = next(csv.reader([piece]), [])
        except csv.Error:
            continue
        if len(cells) != width or not any(c.strip() for i, c in enumerate(cells) if i != label_at):
            continue
        names = [n.strip() for n in cells[label_at].split("|") if n.strip()]
        if names and all(n in intents for n in names):
            return piece
    return None
