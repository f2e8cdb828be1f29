"""Every input of every event and API endpoint of the app checked by type at the door, before
Gradio reads it (issue 73 items 4 and 9), by the one rule the REST bodies follow
(:mod:`app.perimeter.json_types`: a whole number is no ``true``, a text no list...).

Gradio hands each value to its input component, which takes almost anything: ``POST
/gradio_api/call/predict {"data": ["Q", 5, 3]}`` reached the prediction with a number for its
text ("Something went wrong (AttributeError)"), a checkbox kept the text ``"no"`` (true), a
number box took ``true`` as 1. :func:`typed_doors` wraps the app's ``validate_inputs``, which
Gradio calls for every call of every event (the page's, ``/call``, ``/run``, the queue; each
call of a batch) with the values as sent. What each input takes (:func:`expected`):

- an API endpoint's (``gr.api``): its parameter's type as a caller sends it (a project: its
  name, a text; a batch endpoint's: one item of its list);
- a page component's: its parameter's type where that is a JSON type (a dropdown of numbers, of
  several choices), else what the page sends for it (:data:`SENT`); a whole number for a number
  box of whole numbers (precision 0); ``null`` where the parameter takes it, or takes a project
  (the guard answers "Pick a project first"), or the page leaves the component empty
  (:data:`MAY_BE_EMPTY`: a picker the page starts with no choice, no file);
- a file, a table: their own data model (Gradio's ``FileData``, its table's);
- a state: nothing (Gradio takes it from the session, whatever a call sends).

A call with fewer values than the event has inputs is refused too (Gradio's own check answered
in its words). A refusal is the call's error and changes nothing; nothing is logged.
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable
from typing import Any

import gradio as gr
from pydantic import ValidationError

from app.perimeter.json_types import accepts, refusal, shown
from app.ui.guard import PROJECTS

Check = Callable[[Any], str | None]  # a value as sent -> why it is refused (None: taken)
CHOICE = str | int | float
# What the page sends for a component whose parameter says no JSON type (Any, a class).
SENT: dict[type, Any] = {
    gr.Textbox: str,
    gr.Markdown: str,
    gr.HTML: str,
    gr.Code: str,
    gr.Number: float,
    gr.Slider: float,
    gr.Checkbox: bool,
    gr.Dropdown: CHOICE | list[CHOICE],
    gr.Radio: CHOICE,
    gr.CheckboxGroup: list[CHOICE],
}
# What a component with a data model of its own takes, in words.
HOLDS: dict[type, str] = {
    gr.File: "a file uploaded to this app (its path, in an object)",
    gr.Dataframe: "a table (its headers and rows, in an object)",
}
# Components the page may leave empty: it sends null for them.
MAY_BE_EMPTY = (gr.Dropdown, gr.Radio, gr.Number, gr.File)
JSON_TYPES = (str, int, float, bool, type(None), list, dict, tuple)
TOO_FEW = "This call sent {sent} value(s); the event takes {wanted}. Nothing was changed."


def _is_json(hint: Any) -> bool:
    """Whether ``hint`` is made of JSON types only (and Literal choices): a parameter that says
    what the page sends."""
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return True
    if origin is not None:
        args = typing.get_args(hint)
        base = origin if origin not in (typing.Union, types.UnionType) else None
        return (base is None or base in JSON_TYPES) and all(a is Any or _is_json(a) for a in args)
    return hint in JSON_TYPES


def _special(param: inspect.Parameter, hint: Any) -> bool:
    """A parameter Gradio fills itself (a request, an event's data, a progress bar, OAuth)."""
    if isinstance(param.default, gr.Progress):
        return True
    kinds = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    return any(str(getattr(k, "__module__", "")).startswith("gradio") for k in kinds)


def parameters(fn: Callable[..., Any]) -> list[tuple[str, Any]]:
    """(name, type hint) of each parameter an event's inputs fill, in order (Any: none)."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    try:
        hints = typing.get_type_hints(fn)
    except (NameError, TypeError):  # a hint that does not resolve says nothing here
        hints = {}
    out = []
    for param in signature.parameters.values():
        hint = hints.get(param.name, Any)
        positional = param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD)
        if param.kind is param.VAR_POSITIONAL or (positional and not _special(param, hint)):
            out.append((param.name, hint))
    return out


def _item(hint: Any) -> Any:
    """One item of a batch endpoint's list parameter."""
    args = typing.get_args(hint)
    return args[0] if typing.get_origin(hint) is list and args else Any


def expected(
    block: Any, name: str, hint: Any, batch: bool = False, project: bool = False
) -> Check | None:
    """How an input of an event is checked (None: not here): see the module. ``project``: the
    parameter takes a project (the guard answers an empty picker: "Pick a project first")."""
    from gradio.components.api_component import Api

    if isinstance(block, gr.State) or getattr(block, "stateful", False):
        return None
    if isinstance(block, Api):
        wanted = _item(hint) if batch else hint
        return None if wanted is Any else functools.partial(refusal, name, wanted)
    model = getattr(block, "data_model", None)
    if model is not None:
        what = HOLDS.get(type(block), "what its component holds")
        return functools.partial(_fits_model, name, what, model, isinstance(block, MAY_BE_EMPTY))
    declared = _is_json(hint)
    wanted = hint if declared else SENT.get(type(block))
    if isinstance(block, gr.Dropdown) and not declared:  # one choice, or a list of several
        wanted = list[CHOICE] if block.multiselect else CHOICE
    if wanted is None:
        return None
    if isinstance(block, gr.Number) and block.precision == 0:
        wanted = int  # a whole number, as the API's docs say it (1.5 is no page's number)
    if _may_be_empty(block, hint, declared, project):
        wanted = wanted | None
    return functools.partial(refusal, name, wanted)


def _may_be_empty(block: Any, hint: Any, declared: bool, project: bool) -> bool:
    """Whether null is a value of this input: its parameter takes it, or takes a project, or the
    page may send it (a picker or a number box the page starts empty; any, where the parameter
    says nothing). A text box's null is read as its empty text first (:func:`blank_texts`)."""
    if not isinstance(block, MAY_BE_EMPTY):
        return False
    if project or isinstance(block, gr.File) or (declared and accepts(hint, None)):
        return True
    return not declared or block.value in (None, [])


def _fits_model(name: str, what: str, model: Any, may_be_empty: bool, value: Any) -> str | None:
    """A file's or a table's value: what its data model reads (or, for a file, nothing)."""
    if value is None and may_be_empty:
        return None
    try:
        model.model_validate(value)
    except (ValidationError, TypeError, ValueError):
        return f"`{name}` takes {what}, not {shown(value)}."
    return None


def checks(block_fn: Any) -> list[Check | None]:
    """Each input's check of an event (computed once per event)."""
    found: list[Check | None] | None = getattr(block_fn, "_intent_studio_checks", None)
    if found is None:
        params = parameters(block_fn.fn) if block_fn.fn is not None else []
        projects = getattr(block_fn.fn, PROJECTS, ())
        found = []
        for i, block in enumerate(block_fn.inputs):
            name, hint = params[i] if i < len(params) else (f"input {i + 1}", Any)
            found.append(expected(block, name, hint, block_fn.batch, name in projects))
        block_fn._intent_studio_checks = found
    return found


def blank_texts(block_fn: Any) -> list[int]:
    """The inputs of an event that are text boxes whose parameter takes no null: the page sends
    null for a text box it has not mounted yet (a tab a viewer never opened), which the door
    reads as the box's empty text ("") rather than refusing it or passing None to a ``str``."""
    found: list[int] | None = getattr(block_fn, "_intent_studio_blank", None)
    if found is None:
        params = parameters(block_fn.fn) if block_fn.fn is not None else []
        found = [
            i
            for i, block in enumerate(block_fn.inputs)
            if isinstance(block, gr.Textbox)
            and not (i < len(params) and _is_json(params[i][1]) and accepts(params[i][1], None))
        ]
        block_fn._intent_studio_blank = found
    return found


def typed_doors(demo: gr.Blocks) -> None:
    """Check every value of every call of ``demo``'s events by type before Gradio reads it
    (see the module); a refusal is the call's error."""
    validate = demo.validate_inputs

    def checked(block_fn: Any, inputs: list[Any]) -> None:
        if block_fn.fn is not None and len(inputs) < len(block_fn.inputs):
            message = TOO_FEW.format(sent=len(inputs), wanted=len(block_fn.inputs))
            raise gr.Error(message, print_exception=False)
        for i in blank_texts(block_fn):
            if i < len(inputs) and inputs[i] is None:
                inputs[i] = ""  # in place: Gradio preprocesses this very list
        validate(block_fn, inputs)
        for check, value in zip(checks(block_fn), inputs, strict=False):
            said = check(value) if check is not None else None
            if said is not None:
                raise gr.Error(f"{said} Nothing was changed.", print_exception=False)

    demo.validate_inputs = checked  # type: ignore[method-assign]
