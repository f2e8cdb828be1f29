"""The ids a user sends (an utterance's, a job's, a version's, an utterance's version number),
checked once at the edge of every door: REST (``app.api.models.Id``, from :data:`MAX_ID`), the
Gradio events and endpoints and the command line (:func:`parse_id`).

Every id column is an ``INTEGER``: 32 bits on PostgreSQL, so no row there has an id above
:data:`MAX_ID` (SQLite's 64-bit integers hand out ids one after the other, and never reach it).
A number past it, below 1, with a fraction, or no number at all names nothing: it is refused
with a message, before any statement is sent (sent, 2**64 raised ``OverflowError`` in the
SQLite driver and 2**31 a ``DataError`` in PostgreSQL's: a 500 with a traceback, issue 64).

Example:
    >>> parse_id("12"), parse_id(7.0, "job id")
    (12, 7)
    >>> parse_id(2**64, "utterance id")
    Traceback (most recent call last):
    storage.ids.BadId: An utterance id is a whole number from 1 to 2,147,483,647: 18446744073709551616 is none.
"""

from __future__ import annotations

import math

from storage.errors import StorageError

__all__ = ["MAX_ID", "BadId", "parse_id", "whole_number"]

MAX_ID = 2**31 - 1  # PostgreSQL's INTEGER, the type of every id column (storage/tables.py)


class BadId(StorageError):
    """A value that is no id: refused at the door, nothing read or changed (a ValueError: 400
    over REST, a message in the UI, exit status 2 on the command line)."""


def _article(what: str) -> str:
    return "An" if what[:1].lower() in "aeiou" else "A"


def parse_id(value: object, what: str = "id") -> int:
    """``value`` (an int, a float without a fraction, or a text of digits) as an id: from 1 to
    :data:`MAX_ID`.

    Raises:
        BadId: anything else, saying what an id is (``what`` names it: "utterance id").
    """
    return whole_number(value, what)


def whole_number(value: object, what: str, *, low: int = 1, high: int = MAX_ID) -> int:
    """``value`` as a whole number from ``low`` to ``high`` (at most :data:`MAX_ID`): an id, a
    page, a count a user asks for (:func:`parse_id`).

    Raises:
        BadId: anything else, saying what it is (``what`` names it).
    """
    high = min(high, MAX_ID)
    number: int | None = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    elif isinstance(value, str):
        text = value.strip().removeprefix("#")
        digits = text.isascii() and text.isdigit() and len(text.lstrip("0")) <= len(str(MAX_ID))
        number = int(text) if digits else None  # (int() of 5,000 digits raises ValueError)
    if number is None or not low <= number <= high:
        shown = repr(value) if isinstance(value, str) else str(value)
        raise BadId(
            f"{_article(what)} {what} is a whole number from {low:,} to {high:,}: "
            f"{shown[:40]} is none."
        )
    return number
