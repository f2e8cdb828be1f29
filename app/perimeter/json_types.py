"""One rule for the type of every value a client sends, at every door (issue 73 items 4 and 9):
a REST body's fields (:class:`Body`) and every input of every Gradio event and endpoint
(:mod:`app.ui.door_types`) take a value only when it is of their type in JSON, as pydantic's
strict mode reads it:

- a whole number for an ``int`` (not ``true`` or ``false``, not ``1.5``, not ``"1"``);
- a number for a ``float`` (a whole one too; not ``true`` or ``false``, not ``"1.5"``);
- text for a ``str``; ``true`` or ``false`` for a ``bool`` (not ``1``, not ``"true"``);
- a list for a ``list``, each item by the same rule; an object for a ``dict``;
- ``null`` only where the value may be absent.

Before, JSON ``true`` was taken as 1 (REST ``predict {"k": true}`` answered 200, a project's
``auto_retrain_after=true`` was stored as 1) and a Gradio endpoint took any JSON: 54 of 645 odd
payloads ended in "Something went wrong (AttributeError)". A refusal says, in the app's words,
what the value takes and what came (:func:`refusal`, :func:`takes`).

Example:
    >>> refusal("k", int, True)
    '`k` takes a whole number, not true.'
    >>> refusal("k", int, 3) is None, refusal("weight", float, 2) is None
    (True, True)
    >>> refusal("intents", list[str], ["card_lost", 7])
    '`intents` takes a list of texts, not ["card_lost", 7].'
"""

from __future__ import annotations

import functools
import json
import types
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

# The rule, as pydantic's configuration: strict (no value of one JSON type taken for another);
# a class that is no JSON type (a table, a file) is checked by isinstance.
STRICT = ConfigDict(strict=True, arbitrary_types_allowed=True)
SHOWN_CHARS = 40  # of a refused value, in a refusal

# A pydantic error's type -> what the value takes, in the app's words.
WORDS = {
    "int_type": "a whole number",
    "float_type": "a number",
    "string_type": "a text",
    "bool_type": "true or false",
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "none_required": "null",
}


class Body(BaseModel):
    """A REST request body: each field takes a value by this module's rule."""

    model_config = ConfigDict(strict=True)


def words(hint: Any) -> str:
    """What a type hint takes, as a person reads it.

    Example:
        >>> words(int | None), words(list[str]), words(typing.Literal["train", "test"])
        ('a whole number or null', 'a list of texts', "one of 'train', 'test'")
    """
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return "anything"
    if hint is type(None) or hint is None:
        return "null"
    if origin in (typing.Union, types.UnionType):
        return " or ".join(words(a) for a in sorted(args, key=lambda a: a is type(None)))
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin in (list, tuple, set, frozenset):
        item = words(args[0]) if args else "anything"
        plural = {"a text": "texts", "a whole number": "whole numbers", "a number": "numbers"}
        return f"a list of {plural.get(item, item)}" if args else "a list"
    if origin is dict or hint is dict:
        return "an object"
    named = {str: "a text", int: "a whole number", float: "a number", bool: "true or false"}
    return named.get(hint, f"a {getattr(hint, '__name__', str(hint))}")


def shown(value: Any) -> str:
    """A value as a client sent it (JSON), clipped."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


@functools.cache
def _adapter(hint: Any) -> TypeAdapter[Any]:
    return TypeAdapter(hint, config=STRICT)


def accepts(hint: Any, value: Any) -> bool:
    """Whether ``value`` is of the type ``hint`` by the rule."""
    try:
        _adapter(hint).validate_python(value)
    except ValidationError:
        return False
    return True


def refusal(name: str, hint: Any, value: Any) -> str | None:
    """None when ``value`` is of the type ``hint``; else the refusal, naming ``name``."""
    if accepts(hint, value):
        return None
    return f"`{name}` takes {words(hint)}, not {shown(value)}."


def takes(error: typing.Mapping[str, Any]) -> str | None:
    """A pydantic error of a value of the wrong type (a REST body's), in the app's words: what
    the value takes and what came; None for any other error (a range, a length: its own words).

    Example:
        >>> takes({"type": "int_type", "input": True})
        'takes a whole number, not true'
    """
    said = WORDS.get(str(error.get("type")))
    return None if said is None else f"takes {said}, not {shown(error.get('input'))}"
