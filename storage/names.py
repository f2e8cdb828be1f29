"""Intent names: how one is written, and when two names are one intent (issue 43, hole 4).

A name is stored NFC-normalised and trimmed, with something visible in it and nothing invisible
(:func:`name_problem`). Two names are **one** when they have the same key (:func:`name_key`):

1. NFKC, case-folded, default-ignorable code points removed (Unicode's ``NFKC_Casefold``):
   ``Greet``, full-width ``ｇｒｅｅｔ`` and ``greet`` + a variation selector are ``greet``;
2. Latin small capitals as their letters (``ᴛʀᴀᴄᴋ`` is ``track``: Unicode gives them no
   decomposition and TR39 no prototype);
3. the Unicode TR39 skeleton: ``grеet`` with a Cyrillic ``е`` is ``greet``; overlay marks (a
   stroke or slash drawn through a letter) dropped, then folded and skeletonised again, so that
   letters whose prototype is a *capital* (Cherokee ``ᎢᏒᎪᏟᏦ`` is ``TRACK``) meet the lower case;
4. runs of spaces, hyphens and underscores are one separator: ``card-block`` and ``card block``
   are ``card_block`` (they read, and anchor, as the same words).

Case folding comes before the skeleton, so that ``INFO`` is ``info`` (a skeleton first makes the
capital ``I`` an ``l``, and ``INFO`` ``lnfo``); a capital ``I`` is then an ``i``, no longer a
look-alike of ``l``: the one thing the skeleton alone caught that the key does not.

A project's name follows the same character rules as an intent's (:func:`project_name_problem`):
something visible, nothing invisible or controlling, at most :data:`MAX_NAME_CHARS` characters.

The reserved label's aliases (``OUT-OF-SCOPE``, ``Out of scope``, ``out_οf_scope`` with a Greek
``ο``) are :data:`OUT_OF_SCOPE`, stored or not. Wherever a person or a file names an intent, the
name is resolved to the stored name with its key (:class:`NameIndex`); a *new* name whose key is
an existing intent's is refused naming it (:meth:`NameIndex.check_new`).

Example:
    >>> name_key("Greet") == name_key("\\uff47\\uff52\\uff45\\uff45\\uff54") == name_key("greet\\ufe00")
    True
    >>> name_key("Out Of Scope") == name_key("out-\\u03bff-scope") == name_key(OUT_OF_SCOPE)
    True
    >>> index = NameIndex(["greet", "card_block"])
    >>> index.find("GREET"), index.find("card-block"), index.find("OUT_OF_SCOPE"), index.find("bye")
    ('greet', 'card_block', 'out_of_scope', None)
    >>> name_problem("\\u3164")
    "An intent name needs something visible: '\\\\u3164' has only invisible, filler or combining characters."
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from functools import lru_cache

import regex
from confusable_homoglyphs.confusables import (  # type: ignore[import-untyped]
    confusables_data as _CONFUSABLES,
)
from sqlalchemy import select
from sqlalchemy.orm import Session

from storage.errors import StorageError
from storage.tables import Intent

# The reserved label of examples that belong to no intent: ``core.retrieval.scope.OUT_OF_SCOPE``
# (storage cannot import core; tests/app/formats/test_names_on_import.py checks they agree).
OUT_OF_SCOPE = "out_of_scope"
MAX_NAME_CHARS = 120
SHOW_NAMES = 8

# Unicode's Default_Ignorable_Code_Point (variation selectors, zero-width characters, Hangul
# fillers, tags...): the `regex` package reads it from its own, current Unicode data.
_IGNORABLE = regex.compile(r"\p{Default_Ignorable_Code_Point}")
# A braille blank looks like a space but is a symbol (So): nothing a name needs.
_BLANK_SYMBOLS = frozenset("\u2800")
_SEPARATORS = regex.compile(r"[\p{Zs}\p{Pd}\p{Pc}\u2800]+")
_EDGES = regex.compile(r"^[\p{Zs}\u2800]+|[\p{Zs}\u2800]+$")
# Bidi controls (embeddings, overrides, isolates, marks): category Cf, named in the message.
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# Control (Cc), format (Cf: zero-width, joiners, BOM, bidi), line/paragraph separators and
# surrogates: nothing a name needs, everything that hides a difference.
_NOT_IN_NAMES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
# What shows nothing on its own: separators, controls and formats, combining marks.
_SHOWS_NOTHING = frozenset({"Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Mn", "Me"})


# Unicode names no control character: these are the ones people know.
_CONTROL_NAMES = {0x07: "BELL", 0x08: "BACKSPACE", 0x09: "TAB", 0x0A: "LINE FEED"}
_CONTROL_NAMES |= {0x0D: "CARRIAGE RETURN", 0x1B: "ESCAPE", 0x7F: "DELETE", 0x9B: "CSI"}


def char_name(c: str) -> str:
    """``c``'s Unicode name, or what a control character is called (``ESCAPE``)."""
    return unicodedata.name(c, "") or _CONTROL_NAMES.get(ord(c), "CONTROL")


def is_ignorable(c: str) -> bool:
    """Whether ``c`` has Unicode's Default_Ignorable_Code_Point property (it is not drawn)."""
    return _IGNORABLE.match(c) is not None


def _shows_nothing(name: str) -> bool:
    return all(
        is_ignorable(c) or c in _BLANK_SYMBOLS or unicodedata.category(c) in _SHOWS_NOTHING
        for c in name
    )


def _hidden(c: str) -> str | None:
    """What kind of character ``c`` is when a name cannot hold it, else None."""
    if c == "\x00":
        return "NUL"
    if unicodedata.category(c) in _NOT_IN_NAMES:
        return "a bidi-control" if c in _BIDI else "an invisible or control"
    if is_ignorable(c) or c in _BLANK_SYMBOLS:
        return "an invisible or blank"
    return None


def _problem(name: str, *, hidden_ok: bool, what: str = "intent") -> str | None:
    a = "An" if what[0] in "aeiou" else "A"
    if not name:
        return f"{a} {what} needs a name."
    if len(name) > MAX_NAME_CHARS:
        return f"{a} {what} name is at most {MAX_NAME_CHARS} characters."
    if "|" in name and what == "intent":
        return "An intent name cannot contain '|' (it separates labels in files)."
    if "\x00" in name:
        return f"{a} {what} name cannot contain a NUL character."
    if _shows_nothing(name):
        return (
            f"{a} {what} name needs something visible: {name!a} has only invisible, filler or "
            "combining characters."
        )
    for c in name:
        if (kind := _hidden(c)) is not None and not (hidden_ok and is_ignorable(c)):
            return (
                f"{a} {what} name cannot contain {kind} character (U+{ord(c):04X} "
                f"{char_name(c)}): it makes names that look alike."
            )
    return None


def name_problem(name: str) -> str | None:
    """What is wrong with ``name`` (already NFC-normalised and trimmed) as a new intent's name,
    or None."""
    return _problem(name, hidden_ok=False)


def label_problem(name: str) -> str | None:
    """What is wrong with ``name`` as a label in a file, whatever the project holds, or None:
    the rules of :func:`name_problem` except invisible (default-ignorable) characters, which a
    label may carry when it names an existing intent (``greet`` + a variation selector is
    ``greet``; as a new name it is refused when imported)."""
    return _problem(name, hidden_ok=True)


def project_name_problem(name: str) -> str | None:
    """What is wrong with ``name`` (NFC-normalised and trimmed) as a project's name, or None:
    the character rules of an intent's name (see :func:`name_problem`)."""
    return _problem(name, hidden_ok=False, what="project")


def validate_project_name(name: str) -> str:
    """``name`` NFC-normalised and trimmed, or :class:`StorageError` saying why it cannot be a
    project's name.

    Example:
        >>> validate_project_name(" shop ")
        'shop'
        >>> validate_project_name("shop\x1b[2J")
        Traceback (most recent call last):
        ...
        storage.errors.StorageError: A project name cannot contain an invisible or control character (U+001B ESCAPE): it makes names that look alike.
    """
    if not isinstance(name, str):
        raise StorageError("A project name must be a string.")
    clean = unicodedata.normalize("NFC", name).strip()
    if (msg := project_name_problem(clean)) is not None:
        raise StorageError(msg)
    return clean


def validate_intent_name(name: str) -> str:
    """``name`` NFC-normalised and trimmed, or :class:`StorageError` saying why it cannot be an
    intent's name (see :func:`name_problem`)."""
    if not isinstance(name, str):
        raise StorageError("An intent name must be a string.")
    clean = unicodedata.normalize("NFC", name).strip()
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
    """The Unicode TR39 skeleton of ``name``: NFD, default-ignorable code points removed, each
    character replaced by its confusable prototype, NFD again. Two names with one skeleton look
    alike."""
    text = _IGNORABLE.sub("", unicodedata.normalize("NFD", name))
    return unicodedata.normalize("NFD", "".join(_prototype(c) for c in text))


def _folded(name: str) -> str:
    """NFKC_Casefold: NFKC, default-ignorable code points removed, case-folded, NFKC again."""
    text = _IGNORABLE.sub("", unicodedata.normalize("NFKC", name))
    return unicodedata.normalize("NFKC", text.casefold())


def _separated(name: str) -> str:
    return _SEPARATORS.sub("_", _EDGES.sub("", name))


def _small_capitals() -> dict[int, str]:
    """Latin small capitals (``ᴛ``, ``ʀ``...) -> their lower-case letters."""
    found: dict[int, str] = {}
    for start, end in ((0x0250, 0x02B0), (0x1D00, 0x1D80), (0xA720, 0xA800), (0x1DF00, 0x1E000)):
        for code in range(start, end):
            name = unicodedata.name(chr(code), "")
            letter = name.removeprefix("LATIN LETTER SMALL CAPITAL ")
            if letter != name and len(letter) == 1:
                found[code] = letter.lower()
    return found


_SMALL_CAPITALS = _small_capitals()


def _without_overlays(text: str) -> str:
    """``text`` (NFD) without overlay marks (canonical combining class 1: strokes, slashes)."""
    return "".join(c for c in text if unicodedata.combining(c) != 1)


def _look(name: str) -> str:
    """What ``name`` looks like: steps 1 to 3 of the key (see the module docstring)."""
    once = skeleton(_folded(name).translate(_SMALL_CAPITALS))
    return skeleton(_folded(_without_overlays(once)))


@lru_cache(maxsize=16384)
def name_key(name: str) -> str:
    """The key two names share when they are one intent (see the module docstring).

    Example:
        >>> name_key("\u13a2\u13d2\u13aa\u13df\u13e6_\u13be\u13d2\u13a0\u13ac\u13d2")  # Cherokee
        'track_order'
        >>> name_key("\u1d1b\u0280\u1d00\u1d04\u1d0b_order")  # Latin small capitals
        'track_order'
    """
    return _separated(_look(name))


OUT_OF_SCOPE_KEY = name_key(OUT_OF_SCOPE)

# How two names with one key differ, tried in this order (each step on top of the ones before).
_STEPS = (
    ("case", str.casefold),
    ("full-width or compatibility forms", lambda t: unicodedata.normalize("NFKC", t)),
    ("invisible characters", lambda t: _IGNORABLE.sub("", t).replace("\u2800", "")),
    ("look-alike characters", _look),
    ("spaces, hyphens or underscores", _separated),
)


def how_they_differ(a: str, b: str) -> str:
    """In words, how two names with one key differ ("case and look-alike characters").

    Example:
        >>> how_they_differ("Out-of-scope", "out_of_scope")
        'case and spaces, hyphens or underscores'
    """
    found = []
    for what, step in _STEPS:
        a2, b2 = step(a), step(b)
        if (a2, b2) != (a, b):
            found.append(what)
        a, b = a2, b2
        if a == b:
            break
    return " and ".join(found) or "nothing"


def _collision(name: str, other: str) -> StorageError:
    if other == OUT_OF_SCOPE:
        return StorageError(
            f"The intent name {name!r} looks like the reserved label {OUT_OF_SCOPE!r}: they "
            f"differ only in {how_they_differ(name, other)}. Use {OUT_OF_SCOPE!r} for examples "
            "that belong to no intent, or pick a name that looks different."
        )
    return StorageError(
        f"The intent name {name!r} looks like the existing intent {other!r}: they differ only in "
        f"{how_they_differ(name, other)} ({name!a} vs {other!a}). Use {other!r}, or pick a "
        "name that looks different."
    )


class NameIndex:
    """Intent names by key: which stored name a name given by a person or a file means.

    Older projects may hold two names with one key (made before the key); an exact name still
    finds its own intent, and a variant of both is refused, asking to merge them."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        self._names: set[str] = set()
        self._by_key: dict[str, list[str]] = {}
        for name in names:
            self.add(name)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def add(self, name: str) -> None:
        """Count ``name`` as stored (a new intent of an import, or a rename)."""
        if name not in self._names:
            self._names.add(name)
            self._by_key.setdefault(name_key(name), []).append(name)

    def discard(self, name: str) -> None:
        if name in self._names:
            self._names.discard(name)
            self._by_key[name_key(name)].remove(name)

    def find(self, name: str) -> str | None:
        """The stored name ``name`` means: itself, the one stored name with its key, or
        :data:`OUT_OF_SCOPE` for an alias of the reserved label (stored or not); None for a new
        name.

        Raises:
            StorageError: several stored names have its key (merge them first).
        """
        name = unicodedata.normalize("NFC", name).strip()
        if name in self._names:
            return name
        key = name_key(name)
        if key == OUT_OF_SCOPE_KEY:
            return OUT_OF_SCOPE
        same = self._by_key.get(key, [])
        if len(same) > 1:
            shown = " and ".join(repr(n) for n in sorted(same)[:SHOW_NAMES])
            raise StorageError(
                f"{name!r} could be {shown}: they are one name written in different ways. Merge "
                "them into one (Design tab, or REST merge), then use its name."
            )
        return same[0] if same else None

    def validate_new(self, name: str) -> str:
        """``name`` as a new intent's name (NFC, trimmed): refused first when it is a stored
        name written another way (see :meth:`check_new`), then by :func:`name_problem`."""
        if not isinstance(name, str):
            raise StorageError("An intent name must be a string.")
        clean = unicodedata.normalize("NFC", name).strip()
        self.check_new(clean)
        return validate_intent_name(clean)

    def check_new(self, name: str) -> None:
        """Refuse ``name`` (valid, NFC, trimmed) as a new intent's name when its key is a stored
        name's or the reserved label's.

        Raises:
            StorageError: naming the intent it would be mistaken for ("use 'greet'").
        """
        key = name_key(name)
        if key == OUT_OF_SCOPE_KEY and name != OUT_OF_SCOPE:
            raise _collision(name, OUT_OF_SCOPE)
        others = [n for n in self._by_key.get(key, []) if n != name]
        if others:
            raise _collision(name, others[0])


def mapping_note(mapped: dict[str, str]) -> str:
    """The note an import adds when it mapped names onto the intents they name ("" for none).

    Example:
        >>> mapping_note({"Greet": "greet"})
        "Mapped 1 intent name(s) onto the intent they name (one name per intent, whatever its case, width, invisible characters, separators or look-alike letters): 'Greet' → 'greet'."
    """
    if not mapped:
        return ""
    pairs = [f"{a!r} → {b!r}" for a, b in mapped.items()]
    more = f" and {len(pairs) - SHOW_NAMES} more" if len(pairs) > SHOW_NAMES else ""
    return (
        f"Mapped {len(pairs)} intent name(s) onto the intent they name (one name per intent, "
        "whatever its case, width, invisible characters, separators or look-alike letters): "
        f"{', '.join(pairs[:SHOW_NAMES])}{more}."
    )


def project_index(s: Session, project_id: int | None) -> NameIndex:
    """The names of a project's intents (none for a project not created yet)."""
    if project_id is None:
        return NameIndex()
    return NameIndex(s.scalars(select(Intent.name).where(Intent.project_id == project_id)))
