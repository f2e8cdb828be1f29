"""The rules for the texts of a project, in one place: an utterance's text, its context (the
turn before it), its split, and an intent's name. Every path (UI, file import, REST, CLI) goes
through them.

Texts and names are stored NFC-normalised, so ``café`` typed as one code point or as ``e`` plus a
combining accent is one text. A name refuses control, zero-width and bidi-control characters (they
make two names that look the same), and a new name whose Unicode TR39 skeleton equals an existing
name's (Cyrillic ``е`` in ``grеet`` beside ``greet``) is refused, naming the existing intent.

Example:
    >>> validate_text("  hi  "), validate_context(None), validate_context(" Anything else? ")
    ('hi', '', 'Anything else?')
    >>> validate_intent_name("cafe\u0301") == "caf\u00e9"
    True
    >>> skeleton("gr\u0435et") == skeleton("greet")
    True
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from functools import lru_cache

from confusable_homoglyphs.confusables import (  # type: ignore[import-untyped]
    confusables_data as _CONFUSABLES,
)

from storage.errors import StorageError
from storage.tables import SPLITS

MAX_TEXT_CHARS = 2000
MAX_NAME_CHARS = 120
# Bidi controls (embeddings, overrides, isolates, marks): category Cf, named in the message.
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# Control (Cc), format (Cf: zero-width, joiners, BOM, bidi), line/paragraph separators and
# surrogates: nothing a name needs, everything that hides a difference.
_NOT_IN_NAMES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


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


def name_problem(name: str) -> str | None:
    """What is wrong with an intent name (already NFC-normalised and trimmed), or None."""
    if not name:
        return "An intent needs a name."
    if len(name) > MAX_NAME_CHARS:
        return f"An intent name is at most {MAX_NAME_CHARS} characters."
    if "|" in name:
        return "An intent name cannot contain '|' (it separates labels in files)."
    for c in name:
        if c == "\x00":
            return "An intent name cannot contain a NUL character."
        if unicodedata.category(c) in _NOT_IN_NAMES:
            kind = "a bidi-control" if c in _BIDI else "an invisible or control"
            return (
                f"An intent name cannot contain {kind} character (U+{ord(c):04X} "
                f"{unicodedata.name(c, 'unnamed')}): it makes names that look alike."
            )
    return None


def validate_intent_name(name: str) -> str:
    """``name`` NFC-normalised and trimmed, or :class:`StorageError` saying why it cannot be an
    intent's name (see :func:`name_problem`)."""
    if not isinstance(name, str):
        raise StorageError("An intent name must be a string.")
    clean = nfc(name).strip()
    if (msg := name_problem(clean)) is not None:
        raise StorageError(msg)
    return clean


@lru_cache(maxsize=8192)
def _prototype(c: str) -> str:
    """The representative of ``c``'s class in Unicode's confusables data (the library stores
    source -> [prototype] and prototype -> [sources]; a pair that lists only each other is one
    class, represented by its smaller member)."""
    entries = [e["c"].strip("\u200e\u200f") for e in _CONFUSABLES.get(c, ())]
    if len(entries) != 1:
        return c  # not confusable, or a prototype with several sources
    other = entries[0]
    back = _CONFUSABLES.get(other, ())
    return other if len(back) > 1 else min(c, other)


def skeleton(name: str) -> str:
    """The Unicode TR39 skeleton of ``name``: NFD, each character replaced by its confusable
    prototype, NFD again. Two names with one skeleton look alike."""
    mapped = "".join(_prototype(c) for c in unicodedata.normalize("NFD", name))
    return unicodedata.normalize("NFD", mapped)


def check_not_confusable(names: Iterable[str], existing: Iterable[str]) -> None:
    """Refuse a new name that looks like an existing one, or like another new one.

    Raises:
        StorageError: naming both; nothing was changed.
    """
    seen = {skeleton(n): n for n in existing}
    for name in names:
        other = seen.setdefault(skeleton(name), name)
        if other != name:
            raise StorageError(
                f"The intent name {name!r} looks like the existing intent {other!r} (they differ "
                f"only in look-alike characters: {name!a} vs {other!a}). Use "
                f"{other!r}, or pick a name that looks different."
            )
