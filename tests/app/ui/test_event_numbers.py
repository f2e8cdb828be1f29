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

    settings = load_settings(tmp_path_factory.mktemp("numbers") / "data")
    ctx = ServingState.open(dataclasses.replace(settings, multi_user=True))
    demo = ensure_demo_project(ctx.db)
    auth.ensure_admin(ctx.db, "admin-password")
    yield build_app(ctx), demo
    ctx.close()


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
    assert wrong == []
