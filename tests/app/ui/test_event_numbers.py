"""Issue 64, item 1, at every event of the page, the private ones included (the browser calls
them by their index, and so can anyone signed in): every number input of every event of the
built app (enumerated from the app, not listed here) is sent 2**63, 2**64, -1, 0, 1.5, "1e3"
and an empty string, as Gradio hands it over (the input's own preprocessing first). Each is
answered with a message, or refused by the input's own check before the call: never a bug ("Something
went wrong", logged with its traceback). Before, an utterance id of 2**64 in the Data tab's
delete raised OverflowError in the database driver. The public endpoints, over HTTP:
tests/app/test_gradio_doors.py."""

from __future__ import annotations

import inspect
import json
import logging
from typing import Any

import gradio as gr
import pytest

HOSTILE: list[Any] = [2**63, 2**64, -1, 0, 1.5, "1e3", ""]
BUG = "Something went wrong"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The multi-user app on the demo, and the demo's name (its admin calls: every event runs)."""
    import dataclasses

    from app.access import auth
    from app.config import load_settings
    from app.services.projects.projects import ensure_demo_project
    from app.serving.state import ServingState
    from app.ui.main import build_app
    from app.worker import queue_for

    settings = load_settings(tmp_path_factory.mktemp("numbers") / "data")
    serving_state = ServingState.open(dataclasses.replace(settings, multi_user=True))
    serving_state.training.enqueue = queue_for(serving_state.settings)  # as serve wires it
    demo = ensure_demo_project(serving_state.db)
    auth.ensure_admin(serving_state.db, "admin-password")
    yield build_app(serving_state), demo
    serving_state.close()


def _numbers(app: gr.Blocks) -> list[tuple[Any, int]]:
    """(event, position) of every number input of every event of the app."""
    return [
        (f, i)
        for f in app.fns.values()
        if f.fn is not None
        for i, block in enumerate(f.inputs)
        if isinstance(block, gr.Number)
    ]


def _arguments(f: Any, project: str) -> list[Any]:
    """An event's arguments as the page sends them first: the project, every input's value."""
    names = list(inspect.signature(f.fn).parameters)
    out = []
    for i, block in enumerate(f.inputs):
        if i < len(names) and names[i] in ("p", "project"):
            out.append(project)
        elif isinstance(block, gr.State):
            out.append(block.value)
        elif isinstance(block, gr.Textbox):
            out.append(block.value or "")  # what the page sends for an empty box
        else:
            out.append(block.preprocess(block.value) if block.value is not None else None)
    return out


def test_every_number_input_of_every_event_answers_what_is_no_number_without_a_bug(built, caplog):
    app, demo = built
    found = _numbers(app)
    names = {f.name for f, _ in found}
    assert {"save", "delete", "refresh", "turn_page", "act", "assign"} <= names, names
    wrong = []
    for f, i in found:
        block = f.inputs[i]
        for bad in HOSTILE:
            try:
                sent = block.preprocess(bad)
            except Exception:  # Gradio refuses it before the call (the app's words for that:
                continue  # tests/app/test_gradio_doors.py)
            args = _arguments(f, demo)
            args[i] = sent
            caplog.clear()
            with caplog.at_level(logging.ERROR):
                try:
                    # the request last, as Gradio adds it (by the parameter's annotation)
                    said = f.fn(*args, gr.Request(username="admin"))
                except gr.Error as refusal:
                    said = refusal.message
            bugs = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
            if bugs or BUG in str(said):
                wrong.append((f.name, f.api_name, i, bad, bugs[:1] or str(said)[:160]))
    assert wrong == [], "\n".join(map(str, wrong))


# Issue 73, items 4 and 9: a value of another JSON type, at every input of every event.
WRONG_TYPES: list[Any] = ["x", 7, 1.5, 2**63, True, False, None, [], ["x"], {}, {"a": 1}]
# What the page sends for each of these inputs (a whole number is a number; true is none; null
# where the event's parameter takes it): anything else is refused at the door, in the app's words.
SENT: dict[type, tuple[type, ...]] = {
    gr.Textbox: (str, type(None)),
    gr.Markdown: (str, type(None)),
    gr.Number: (int, float, type(None)),
    gr.Slider: (int, float),
    gr.Checkbox: (bool,),
}
# Gradio's words for a value its component could not read. (A text that is no choice of a
# dropdown, of the right type, is Gradio's "Value: x is not in the list of choices": a value,
# not a type; the choices are the page's, per session.)
GRADIOS_WORDS = ("Could not preprocess", "Api.__init__", "Traceback")


def _page_values(f: Any, project: str) -> list[Any]:
    """An event's values as the page sends them (a state's: what Gradio keeps for it)."""
    names = list(inspect.signature(f.fn).parameters)
    out: list[Any] = []
    for i, block in enumerate(f.inputs):
        if i < len(names) and names[i] in ("p", "project"):
            out.append(project)
        elif isinstance(block, gr.State) or block.value is None:
            out.append(None)
        else:
            try:
                out.append(block.postprocess(block.value))
            except Exception:
                out.append(block.value)
    return out


def _taken_as(value: Any, kinds: tuple[type, ...]) -> bool:
    return type(value) in kinds


def _fresh(first: Any) -> Any:
    """A new page's session for one call, as ``SessionState(app)`` makes it, copied from
    ``first`` (made so once): making one computes every block's config, ~15 ms of CPU for this
    app, which the ~600 calls below paid ~10 s for. Nothing a call changes reaches another's:
    the blocks, their configs (to the values inside them) and the states are each the copy's."""
    import copy

    state = copy.copy(first)
    state.blocks_config = copy.copy(first.blocks_config)
    state.config_values = {
        k: {**v, "props": dict(v["props"])} if isinstance(v.get("props"), dict) else dict(v)
        for k, v in first.config_values.items()
    }
    state.state_data, state._state_ttl = {}, {}
    return state


def test_every_input_of_every_event_refuses_another_type_in_the_apps_words(built, caplog):
    """Before, 54 of 645 odd payloads ended in "Something went wrong (AttributeError)" (a number
    for the prediction's text, an utterance filter of 2**63), a checkbox took the text "no" and
    a number box took true as 1. Every value goes through the app's door as a call's do
    (``validate_inputs``, where Gradio reads a call's values first); what it lets through runs
    the event (``process_api``): never a bug, and true is never a number."""
    import asyncio

    from gradio.components.api_component import Api
    from gradio.state_holder import SessionState

    app, demo = built
    app.has_launched = True
    first = SessionState(app)

    async def run(f: Any, data: list[Any]) -> str:
        try:
            answer = await app.process_api(
                block_fn=f,
                inputs=data,
                state=_fresh(first),
                request=gr.Request(username="admin"),
            )
        except gr.Error as refusal:
            return str(refusal.message)
        return json.dumps(answer.get("data"), default=str)

    seen: set[tuple[str, int]] = set()
    tried, wrong = 0, []
    with caplog.at_level(logging.ERROR):
        for f in app.fns.values():
            if f.fn is None:
                continue
            base = _page_values(f, demo)
            for i, block in enumerate(f.inputs):
                key = (f"{f.fn.__module__}.{f.fn.__qualname__}", i)
                if isinstance(block, gr.State) or key in seen:
                    continue
                seen.add(key)
                kinds = SENT.get(type(block))
                if isinstance(block, Api):
                    kinds = {"integer": (int,), "string": (str,), "boolean": (bool,)}.get(
                        block.api_info().get("type", ""), (list,)
                    )
                for bad in WRONG_TYPES:
                    if kinds is not None and bad is not None and _taken_as(bad, kinds):
                        continue  # of its own type: no wrong type (its values: the test above)
                    data = list(base)
                    data[i] = bad
                    tried += 1
                    caplog.clear()
                    try:
                        app.validate_inputs(f, data)  # the door
                        said = asyncio.run(run(f, data))
                        refused = False
                    except gr.Error as refusal:
                        said, refused = str(refusal.message), True
                    bugs = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
                    must_refuse = kinds is not None and not _taken_as(bad, kinds)
                    if (
                        bugs
                        or BUG in said
                        or any(w in said for w in GRADIOS_WORDS)
                        or (must_refuse and not (refused and "takes" in said))
                    ):
                        wrong.append((f.name, f.api_name, i, type(block).__name__, bad, said[:120]))
    assert tried >= 1000, tried
    assert wrong == [], "\n".join(map(str, wrong))
