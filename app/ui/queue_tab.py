"""The Label tab: the labelling queue, one utterance at a time, driven by the keyboard (the keys:
:mod:`app.ui.queue_keys`, what each does: :mod:`app.ui.queue_actions`; no letter is a command, a
letter types an intent's name). Every key presses a visible button, so the mouse does the same (a
click on a listed match takes it); after every answer the focus is back on the card.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from app.access import ProjectHandle
from app.access.actions import LABEL
from app.services.labelling import data as data_svc
from app.services.queue import queue as svc
from app.serving.live import LivePools
from app.serving.training_queue import TrainingQueue
from app.ui import queue_starts as starts
from app.ui.common import attempt, bind
from app.ui.guard import guarded
from app.ui.queue_actions import advance, answer_with, enter, skip, suggestion, take_match, undo
from app.ui.queue_activity import follow_work
from app.ui.queue_keys import HELP, keys_js
from app.ui.queue_model import follow_model, model_js, model_line
from app.ui.queue_view import (
    LOADING,
    QueueSession,
    QueueView,
    _card,
    pick,
    refused,
    render,
)
from storage.db import Database


def start(
    live: LivePools,
    p: ProjectHandle | None,
    how: str,
    near: str | None,
    ticket: float | None = None,
    request: gr.Request | None = None,
) -> QueueView | tuple[Any, ...]:
    """The queue in the order ``how``, from its first card. ``ticket``: the page's number for
    this start (:mod:`app.ui.queue_starts`); a start overtaken by a newer one of the same page
    (the page load's, answered after the person's own Start) changes nothing on the page."""
    page = getattr(request, "session_hash", None)
    if not starts.claim(page, ticket):
        return tuple(gr.skip() for _ in QueueView._fields)
    view = _started(live, p, QueueSession(how=how, near=near or None))
    if not starts.still_newest(page, ticket):
        return tuple(gr.skip() for _ in QueueView._fields)
    return view


def _started(live: LivePools, p: ProjectHandle | None, state: QueueSession) -> QueueView:
    if p is None:
        return render(live.db, None, state, "Pick or create a project first.")
    if state.how == "near" and not state.near:
        return render(live.db, p, state, "Pick the intent to label near.")
    try:
        state = advance(live, p, state)
    except ValueError as exc:  # a refusal (an unknown intent to label near); a bug goes on
        return render(live.db, p, state, refused(str(exc)))
    return render(live.db, p, state)


def near_choices(db: Database, how: str, p: ProjectHandle | None) -> tuple[Any, Any]:
    """The 'near intent' picker: shown for the *near an intent* order, with the intents; and the
    status line: why it offers none when they could not be read (else left as it is)."""
    names, err = attempt(lambda: data_svc.intent_names(db, p)) if p is not None else ([], None)
    said = refused(err) if err else gr.skip()
    return gr.update(visible=how == "near", choices=names or []), said


def build_queue_tab(
    live: LivePools, project: gr.Dropdown, training: TrainingQueue
) -> dict[str, Any]:
    """Lay out the Label tab and bind its keys. Returns its start event and its model line's
    first look (to run on load)."""
    state = gr.State(QueueSession())
    # Compact (assets/style.css, Label tab): at 1280x720 the key row and the status line show
    # without scrolling.
    with gr.Row(elem_id="queue-top"):
        how = gr.Dropdown(
            [(label, key) for key, label in svc.ORDERS.items()],
            value=svc.DEFAULT_ORDER,
            label="Order",
            show_label=False,
            container=False,
            scale=2,
            elem_id="queue-order",
        )
        near = gr.Dropdown(
            [], label="Near intent", show_label=False, container=False, visible=False, scale=2
        )
        start_btn = gr.Button("Start / reorder", scale=0, min_width=170, elem_id="queue-start")
        progress = gr.Markdown(elem_id="queue-progress")
        ticket = gr.Number(0, visible=False)  # the page's number for a start (queue_starts.py)
    line = model_line()  # what serves, "improving…" (app/ui/queue_model.py)
    card = gr.HTML(_card(None, 0, loading=True), elem_id="queue-card")
    with gr.Row(equal_height=True, elem_id="queue-suggestions"):  # a grid: assets/style.css
        buttons, examples = [], []
        for i in range(svc.SUGGESTIONS):
            with gr.Column(min_width=200):
                # none shown until a card has them (issue 75 item 4): render() shows each
                buttons.append(
                    gr.Button(
                        f"{i + 1}",
                        variant="primary" if i == 0 else "secondary",
                        elem_id=f"queue-s{i + 1}",
                        elem_classes=["queue-suggestion"],
                        visible=False,
                    )
                )
                examples.append(gr.Markdown(elem_classes=["queue-example"], visible=False))
    picked = gr.CheckboxGroup(
        [], label="Intents for this utterance (Enter saves them)", visible=False
    )
    with gr.Row(elem_id="queue-filter-row"):
        query = gr.Textbox(
            placeholder="Type an intent's name: Enter takes the one it names, Esc goes back",
            show_label=False,
            container=False,
            scale=2,
            elem_id="queue-filter",
        )
        # the intents the text matches, filled in by the page at each key (queue_keys.js)
        gr.HTML("", elem_id="queue-matches", scale=3)
    with gr.Row(elem_id="queue-keys"):
        enter_btn = gr.Button("Enter", elem_id="queue-enter", size="sm")  # the card says what
        test_btn = gr.Button("⇧Enter · 1 to test", elem_id="queue-test", size="sm")
        oos_btn = gr.Button(f"0 · {svc.OUT_OF_SCOPE}", elem_id="queue-oos", size="sm")
        none_btn = gr.Button("- · no intent", elem_id="queue-none", size="sm")
        skip_btn = gr.Button("Space · skip", elem_id="queue-skip", size="sm")
        delete_btn = gr.Button("Del · delete", elem_id="queue-delete", size="sm", variant="stop")
        undo_btn = gr.Button("Ctrl+Z · undo", elem_id="queue-undo", size="sm")
        # Enter in the filter presses this with the text typed at that moment (queue_keys.js)
        commit_btn = gr.Button(
            "take typed", elem_id="queue-commit", elem_classes=["hidden-trigger"]
        )
        held = follow_work(live.db, project)  # a card asked for holds automatic retrains
    message = gr.Markdown(elem_id="queue-status")
    gr.Markdown(HELP, elem_classes=["queue-help"])

    # The message first: a refused write (a viewer) shows its refusal there.
    outputs = [message, state, card, *buttons, *examples, picked, progress, enter_btn, oos_btn]

    def write(fn: Any) -> Any:
        return guarded(LABEL, outputs=len(outputs), notify=False)(held(fn))

    quiet: dict[str, Any] = {"show_progress": "hidden", "api_visibility": "private"}
    # An answer's click is never skipped: Gradio's default ("once") drops a click while the
    # button's last event has not ended, and a key typed ahead is pressed the moment the answer
    # shows, before it ends. queue_keys.js sends one answer at a time (a click meanwhile, as a
    # double click, is dropped there).
    answers_kw: dict[str, Any] = {**quiet, "trigger_mode": "multiple"}
    # Each start numbered by the page (queue_starts.py): a late one never replaces a newer one.
    started = held(bind(start, live))
    start_in = [project, how, near, ticket]
    start_js = starts.start_js(LOADING)
    start_btn.click(started, start_in, outputs, js=start_js, **quiet)
    how.change(bind(near_choices, live.db), [how, project], [near, message], **quiet)
    changes = [
        button.click(write(bind(suggestion, live, i)), [project, state], outputs, **answers_kw)
        for i, button in enumerate(buttons)
    ]
    picked.input(pick, [state, picked], [state], **quiet)
    changes.append(
        enter_btn.click(write(bind(enter, live)), [project, state], outputs, **answers_kw)
    )
    answers = ((oos_btn, "oos"), (none_btn, "none"), (test_btn, "test"), (delete_btn, "delete"))
    for button, action in answers:
        changes.append(
            button.click(
                write(bind(answer_with, live, action)), [project, state], outputs, **answers_kw
            )
        )
    skip_btn.click(held(bind(skip, live)), [project, state], outputs, **answers_kw)
    changes.append(undo_btn.click(write(bind(undo, live)), [project, state], outputs, **answers_kw))
    # the list of matches follows each key in the page (assets/queue_keys.js): no event here
    # the text is the one the page captured when Enter was pressed, not the box's value now
    typed = "(p, s, q) => [p, s, window.__studioQueueTyped ?? '']"
    changes.append(
        commit_btn.click(
            write(bind(take_match, live)), [project, state, query], outputs, js=typed, **answers_kw
        )
    )
    project.change(started, start_in, outputs, js=start_js, **quiet)
    return {
        "start": (started, start_in, outputs),  # the page load's: number 0, older than any
        "model": follow_model(line, training, live, project, state, outputs),
        "model_line": line,
        "js": keys_js(),
        "model_js": model_js(),
        "changes": changes,
    }
