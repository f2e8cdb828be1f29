"""YAML from an untrusted file, as a node graph with limits: never a Python object; and the one
way the app writes a text into YAML (:func:`quoted`).

PyYAML's constructor expands merge keys (``<<: *a``) eagerly, so a few hundred bytes of nested
merges cost minutes and gigabytes; its composer recurses once per level, so 100,000 nested
brackets end in a ``RecursionError``. :func:`compose_yaml` composes nodes only and refuses, with
the line, a merge key, nesting deeper than :data:`~app.formats.common.MAX_NESTING` levels, a
recursive alias, and aliases that expand the document past :func:`expansion_budget` (nodes plus
scalar characters, an alias counting as everything it stands for), and a tag other than the
core ones (``!!python/object/apply:os.system``).

Example:
    >>> compose_yaml("a: [1, 2]").value[0][0].value
    'a'
    >>> try:
    ...     compose_yaml("a: &x {k: v}\\nb:\\n  <<: *x\\n")
    ... except FormatError as exc:
    ...     print(exc.problems)
    [(3, "merge keys ('<<') are not supported: write the keys out")]
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml
from yaml._yaml import CParser
from yaml.composer import Composer
from yaml.resolver import Resolver

from app.formats.common import MAX_NESTING, FormatError

# Explicit tags a file may use (``!!str 123``); any other (``!!python/object/apply:...``, a local
# ``!tag``) is refused with its line: nothing here builds objects, but a tagged node would still be
# read as some text (an intent named ``?``).
_CORE = "tag:yaml.org,2002:"
ALLOWED_TAGS = frozenset(_CORE + t for t in ("str", "int", "float", "bool", "null", "seq", "map"))


# Most values (scalars, lists, mappings, aliases) one file may hold. A Rasa file writes an intent's
# examples as one block (one value), or one value per example in a list; the limit bounds the
# memory of the node graph (about 0.5 KB a value): a 24 MB one-line flow mapping of 8 M values
# took 0.7 GB.
MAX_YAML_NODES = 300_000


def expansion_budget(text: str) -> int:
    """How large a document may expand with its aliases: twice its own length, plus 1 M."""
    return 2 * len(text) + 1_000_000


class _Refused(Exception):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line, self.message = line, message


class _LimitedLoader(Composer, CParser, Resolver):  # type: ignore[misc]
    """PyYAML's composer over libyaml's parser (C: a 24 MB one-line flow mapping took 105 s in
    the pure-Python scanner), counting nodes, depth and the expanded size as it goes: events are
    parsed one at a time, so a file over a limit is refused before the rest is read."""

    def __init__(self, text: str) -> None:
        CParser.__init__(self, text)
        Composer.__init__(self)
        Resolver.__init__(self)
        self._nodes = 0
        self._depth = 0
        self._weight = 0
        self._budget = expansion_budget(text)
        self._anchored: dict[int, int] = {}  # id(anchored node) -> its expanded size, once done

    def _add(self, weight: int, line: int) -> None:
        self._weight += weight
        if self._weight > self._budget:
            raise _Refused(
                line,
                f"aliases expand the file past {self._budget:,} nodes and characters; "
                "write the repeated parts out",
            )

    def compose_node(self, parent: Any, index: Any) -> Any:
        event: Any = self.peek_event()  # typed Optional by the stubs; never None here
        line = event.start_mark.line + 1
        self._nodes += 1
        if self._nodes > MAX_YAML_NODES:
            raise _Refused(
                line,
                f"more than {MAX_YAML_NODES:,} YAML values; write examples as a block "
                "('examples: |') or split the file",
            )
        if isinstance(event, yaml.AliasEvent):
            node = super().compose_node(parent, index)
            weight = self._anchored.get(id(node))
            if weight is None:
                raise _Refused(line, f"the alias *{event.anchor} refers to a node that holds it")
            self._add(weight, line)
            return node
        if isinstance(event, yaml.ScalarEvent) and (
            isinstance(parent, yaml.MappingNode)
            and index is None
            and event.value == "<<"
            and not event.style  # plain (None in PyYAML, "" in libyaml)
        ):
            raise _Refused(line, "merge keys ('<<') are not supported: write the keys out")
        tag = getattr(event, "tag", None)
        if tag not in (None, "!") and tag not in ALLOWED_TAGS:
            shown = "!!" + tag[len(_CORE) :] if tag.startswith(_CORE) else tag
            raise _Refused(line, f"the YAML tag {shown[:80]} is not supported")
        self._depth += 1
        if self._depth > MAX_NESTING:
            raise _Refused(line, f"nested deeper than {MAX_NESTING} levels")
        start = self._weight
        self._add(1 + len(event.value) if isinstance(event, yaml.ScalarEvent) else 1, line)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if event.anchor is not None:
            self._anchored[id(node)] = self._weight - start
        return node


def compose_yaml(text: str) -> yaml.Node | None:
    """The node graph of a one-document YAML text (None when empty), within the limits above.

    Raises:
        FormatError: not valid YAML, or over a limit; with the line.
    """
    loader = None
    try:
        loader = _LimitedLoader(text)  # libyaml refuses unprintable characters as it reads
        return loader.get_single_node()
    except _Refused as exc:
        raise FormatError("The file cannot be read safely.", [(exc.line, exc.message)]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 0
        if getattr(exc, "problem", None) == "exceeded maximum nesting depth":
            # libyaml's own limit (1,000 levels) stops the parser before ours is reached: the
            # composer never saw those nodes. The same refusal as ours, with its line.
            raise FormatError(
                "The file cannot be read safely.",
                [(line, f"nested deeper than {MAX_NESTING} levels")],
            ) from None
        raise FormatError(
            "The file is not valid YAML.", [(line, str(exc).splitlines()[0])]
        ) from exc
    finally:
        if loader is not None:
            loader.dispose()


# What YAML takes raw inside a double-quoted scalar: printable characters (YAML 1.1 5.1: no C0
# but tab, LF and CR; no DEL, C1, surrogates or U+FFFE/U+FFFF; libyaml refuses a file that holds
# one) other than a line break (NEL, LS, PS are folded into a space) and a byte-order mark.
_NOT_RAW = re.compile(
    "[^\t\n\r\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
)
_NAMED = {"\x85": "\\N", "\u2028": "\\L", "\u2029": "\\P"}


def _escape(match: re.Match[str]) -> str:
    c = match.group()
    if c in _NAMED:
        return _NAMED[c]
    code = ord(c)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def quoted(text: str) -> str:
    """``text`` as a double-quoted YAML scalar that every YAML reader gives back exactly: JSON's
    quoting (YAML's double quotes are a superset of JSON strings) with every character YAML
    refuses raw or reads as a line break escaped (``\\x85`` as ``\\N``, U+2028 as ``\\L``).

    Example:
        >>> quoted('Caf\\u00e9 "x"\\x85\\x9b[2J')
        '"Café \\\\"x\\\\"\\\\N\\\\x9b[2J"'
        >>> yaml.safe_load(quoted("a\\x85b\\u2028c\\x7f")) == "a\\x85b\\u2028c\\x7f"
        True
    """
    return _NOT_RAW.sub(_escape, json.dumps(text, ensure_ascii=False))


def fits_block(text: str) -> bool:
    """Whether ``text`` can be one line of a literal block (``examples: |``) as it is: printable
    (a tab too), without spaces at its ends; any other text is written :func:`quoted`."""
    return all(c == "\t" or c.isprintable() for c in text) and text == text.strip()
