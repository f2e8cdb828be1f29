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
    "escape_controls",
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


# Bidi embeddings, overrides and isolates: they reorder what a reader sees, so a reviewer would
# read a text other than the one the model encodes ("Trojan Source"). The marks (LRM, RLM, ALM)
# only nudge neutral characters, and right-to-left scripts need them: they stay.
BIDI_OVERRIDES = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# What a terminal, a log line or a one-line display must never receive raw: C0 controls but tab
# and line feed, DEL, C1 controls (ESC and CSI start terminal commands, CR rewrites a line), the
# bidi controls and the line and paragraph separators. :func:`escape_controls` writes each as
# ``\uXXXX``, which reads as what it is (and stays valid inside a JSON string).
_CONTROLS = {
    c: f"\\u{c:04x}"
    for c in [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]
    + [0x061C, 0x200E, 0x200F, 0x2028, 0x2029]
    + [ord(c) for c in BIDI_OVERRIDES]
}
_CONTROLS_AND_LINES = {**_CONTROLS, 0x09: "\\u0009", 0x0A: "\\u000a"}


def escape_controls(text: str, *, lines: bool = False) -> str:
    r"""``text`` with every control character (see ``_CONTROLS``) written as ``\uXXXX``; with
    ``lines``, tab and line feed too (a value that must stay on one line: a log field).

    Example:
        >>> escape_controls("dana\x1b[2J\rroot"), escape_controls("a\nb", lines=True)
        ('dana\\u001b[2J\\u000droot', 'a\\u000ab')
    """
    return text.translate(_CONTROLS_AND_LINES if lines else _CONTROLS)


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
    if hidden := next((c for c in clean if c in BIDI_OVERRIDES), None):
        raise StorageError(
            f"{what} contains a bidi control (U+{ord(hidden):04X} "
            f"{unicodedata.name(hidden)}): it shows the text in another order than the one the "
            f"model reads. Remove it: {escape_controls(clean[:80])!r}"
        )
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
