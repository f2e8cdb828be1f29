"""The rules for the texts of a project, in one place: an utterance's text, its context (the
turn before it) and its split; an intent's name is :mod:`storage.names` (re-exported here). Every
path (UI, file import, REST, CLI) goes through them.

Texts and names are stored NFC-normalised, so ``café`` typed as one code point or as ``e`` plus a
combining accent is one text.

Example:
    >>> validate_text("  hi  "), validate_context(None), validate_context(" Anything else? ")
    ('hi', '', 'Anything else?')
    >>> validate_intent_name("cafe\u0301") == "caf\u00e9"
    True
"""

from __future__ import annotations

import unicodedata

from storage.errors import StorageError
from storage.names import MAX_NAME_CHARS, name_problem, skeleton, validate_intent_name
from storage.tables import SPLITS

__all__ = [  # the name rules are re-exported: imported from here by older callers
    "MAX_NAME_CHARS",
    "MAX_TEXT_CHARS",
    "is_blank",
    "name_problem",
    "nfc",
    "skeleton",
    "validate_context",
    "validate_intent_name",
    "validate_split",
    "validate_text",
]

MAX_TEXT_CHARS = 2000


def nfc(text: str) -> str:
    """``text`` in Unicode normal form C (the form every text and name is stored in)."""
    return unicodedata.normalize("NFC", text)


_INVISIBLE = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp"})


def is_blank(text: str) -> bool:
    """True for text with nothing visible: whitespace, zero-width and direction marks, controls."""
    return all(unicodedata.category(c) in _INVISIBLE for c in text)


def validate_text(text: str, *, what: str = "Utterance text") -> str:
    """``text`` trimmed, or :class:`StorageError` saying why it cannot be stored (``what`` names
    it in the message)."""
    if not isinstance(text, str):
        raise StorageError(f"{what} must be a string.")
    clean = nfc(text).strip()
    if is_blank(clean):
        raise StorageError(f"{what} is empty.")
    if len(clean) > MAX_TEXT_CHARS:
        raise StorageError(f"{what} is longer than {MAX_TEXT_CHARS} characters.")
    if "\x00" in clean:
        raise StorageError(f"{what} contains a NUL character.")
    return clean


def validate_context(context: str | None) -> str:
    """The previous turn of an utterance, trimmed; ``""`` (none) for ``None`` or blank text;
    otherwise the rules of :func:`validate_text` (its messages name the context)."""
    if context is None or (isinstance(context, str) and is_blank(context)):
        return ""
    return validate_text(context, what="Context")


def validate_split(split: str) -> str:
    if split not in SPLITS:
        raise StorageError(f"Unknown split {split!r}; use one of {', '.join(SPLITS)}.")
    return split
