"""The Label tab: the labelling queue, one utterance at a time, driven by the keyboard.

Keys (when no text box has the focus): ``1``-``3`` take a suggestion (multi-label: toggle it),
``Enter`` takes the first (multi-label: commits the ticked intents), ``o`` out of scope, ``n`` no
intent, ``t`` the first (or the ticked intents) to test, ``s`` skip, ``d`` delete, ``u`` or
``Ctrl+Z`` undo this queue's last answer; any other letter (or ``/``) starts the intent filter,
where ``Enter`` takes the intent the typed text names (re-matched on the server from exactly that
text; nothing matching or a tie is refused) and ``Esc`` goes back. After every answer the focus
is back on the card, so the next key is a command again. Every key presses a visible button, so
the mouse does the same (a click on a listed match takes it).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict
from typing import Any

import gradio as gr

import assets
from app.context import AppContext
from app.services import data as data_svc
from app.services import queue as svc
from app.ui.common import attempt, bind, ok, problem
from app.ui.guard import guarded
from app.ui.queue_view import _card, filter_intents, render

HELP = (
    "**Keys** `1` `2` `3` take a suggestion · `Enter` the first · `o` out of scope · `n` no intent "
    "· `t` the first to test · `s` skip · `d` delete · `u` / `Ctrl+Z` undo · type to filter "
    "intents, `Enter` takes the one the text names (`/` first for names starting with "
    "d, n, o, s, t, u)"
)

# Pressing a key presses the button with this id (see _JS_KEYS).
KEYS = {
    "1": "queue-s1",
    "2": "queue-s2",
    "3": "queue-s3",
    "Enter": "queue-enter",
    "o": "queue-oos",
    "n": "queue-none",
    "t": "queue-test",
    "s": "queue-skip",
    "d": "queue-delete",
    "u": "queue-undo",
}


def _keys_js() -> str:
    """The keyboard handler (assets/queue_keys.js) with :data:`KEYS` filled in."""
    source = assets.text("queue_keys.js")
    return source.replace("__KEYS__", json.dumps(KEYS))


def _fresh(how: str = svc.DEFAULT_ORDER, near: str | None = None) -> dict[str, Any]:
    return {
        "how": how,
        "near": near,
        "upcoming": [],
        "skipped": [],
        "item": None,
        "picked": [],
        "answered": [],  # when each answer of this session was given (labels/min)
        # this queue's answers and skips, last first out: what u takes back (and shows again)
        "history": [],
        # a refused change to a test row (review order): the same answer again confirms it
        "confirm": None,
        "seq": 0,
    }


def _advance(ctx: AppContext, proj: str, state: dict[str, Any]) -> dict[str, Any]:
    found, ahead = svc.next_item(
        ctx,
        proj,
        state["upcoming"],
        state["how"],
        near=state["near"],
        # reviewing labelled rows: one answered (e.g. its intent confirmed) is not shown again
        exclude=[
            *state["skipped"],
            *([h["id"] for h in state["history"]] if state["how"] == svc.REVIEW else []),
        ],
    )
    item = {**asdict(found), "first": found.first_choice} if found else None
    return {
        **state,
        "item": item,
        "upcoming": ahead,
        "picked": list(item["predicted"]) if item and item["multi_label"] else [],
    }


def start(ctx: AppContext, proj: str | None, how: str, near: str | None) -> tuple:
    state = _fresh(how, near or None)
    if not proj:
        return render(ctx, "", state, "Pick or create a project first.")
    if how == "near" and not near:
        return render(ctx, proj, state, "Pick the intent to label near.")
    try:
        state = _advance(ctx, proj, state)
    except (ValueError, KeyError) as exc:
        return render(ctx, proj, state, problem(str(exc.args[0] if exc.args else exc)))
    return render(ctx, proj, state)


def act(ctx: AppContext, action: str, proj: str, state: dict[str, Any], labels: list[str]) -> tuple:
    """Answer the current item (``take``/``test``/``none``/``delete``/``oos``) and show the next
    one; the answer joins this queue's history under its own batch (what ``u`` takes back)."""
    item = state["item"]
    if item is None:
        return render(ctx, proj, state, problem("Nothing to answer: press Start."))
    batch = str(uuid.uuid4())  # this answer's own change in the audit log: what u takes back
    this = {"id": item["id"], "action": action, "labels": list(labels), "how": state["how"]}
    confirmed = state.get("confirm") == this
    state = {**state, "confirm": None}

    def answer() -> tuple[str, bool]:
        """The answer's message, and whether it is a test row's change still to confirm."""
        try:
            return svc.answer(
                ctx,
                proj,
                item["id"],
                action,
                labels,
                expected_version=item["version"],
                batch=batch,
                confirm_test=confirmed,
                how=state["how"],
            ), False
        except data_svc.UnconfirmedTestChange as exc:
            return str(exc), True

    done, err = attempt(answer)
    msg, ask = done or ("", False)
    if ask:  # the same answer again (the same key) confirms it; anything else forgets it
        again = f"{msg} Give the same answer again (the same key) to change it anyway; s skips it."
        return render(ctx, proj, {**state, "confirm": this}, problem(again))
    if err:
        review = state["how"] == svc.REVIEW
        gone = (
            state["how"] == svc.DISPUTES or svc.item(ctx, proj, item["id"], review=review) is None
        )
        if gone:  # answered by someone else (a dispute: decided by another reviewer)
            return render(ctx, proj, _advance(ctx, proj, state), problem(err))
        return render(ctx, proj, state, problem(err))
    entry = {**this, "batch": batch, "text": item["text"]}
    state = {
        **state,
        "answered": [*state["answered"], time.time()][-200:],
        "history": [*state["history"], entry][-200:],
    }
    return render(ctx, proj, _advance(ctx, proj, state), ok(msg or "", notify=False))


def suggestion(ctx: AppContext, index: int, proj: str, state: dict[str, Any]) -> tuple:
    """Key ``index + 1``: take that suggestion, or (multi-label) tick or untick it."""
    item = state["item"]
    if item is None or index >= len(item["suggestions"]):
        return render(ctx, proj, state, problem("There is no such suggestion."))
    name = item["suggestions"][index]["intent"]
    if not item["multi_label"]:
        return act(ctx, "take", proj, state, [name])
    picked = [p for p in state["picked"] if p != name]
    picked += [] if name in state["picked"] else [name]
    return render(ctx, proj, {**state, "picked": picked})


def enter(ctx: AppContext, proj: str, state: dict[str, Any]) -> tuple:
    item = state["item"]
    if item is not None and item["multi_label"]:
        return act(ctx, "take", proj, state, list(state["picked"]))
    if item is None or not item.get("first"):
        return render(ctx, proj, state, problem("No suggestion yet: type to filter intents."))
    return act(ctx, "take", proj, state, [item["first"]])


def answer_with(ctx: AppContext, action: str, proj: str, state: dict[str, Any]) -> tuple:
    """``t`` (the first suggestion or the ticked intents, into test, never out of scope), ``o``
    (out of scope), ``n``, ``d``."""
    item = state["item"]
    labels: list[str] = []
    if action == "test" and item is not None:
        labels = (
            list(state["picked"])
            if item["multi_label"]
            else [item["first"]]
            if item.get("first")
            else []
        )
    return act(ctx, action, proj, state, labels)


def skip(ctx: AppContext, proj: str, state: dict[str, Any]) -> tuple:
    item = state["item"]
    if item is None:
        return render(ctx, proj, state)
    done = {"id": item["id"], "action": "skip", "labels": [], "batch": None, "text": item["text"]}
    state = {
        **state,
        "skipped": [*state["skipped"], item["id"]],
        "history": [*state["history"], done][-200:],
    }
    return render(
        ctx, proj, _advance(ctx, proj, state), ok(f"Skipped #{item['id']}.", notify=False)
    )


def undo(ctx: AppContext, proj: str, state: dict[str, Any]) -> tuple:
    """Take back this queue's last answer or skip (never another change in the project) and show
    its utterance again, saying what was undone; when this queue has nothing left, say so."""
    history = state["history"]
    if not history:
        return render(ctx, proj, state, problem("Nothing left to undo in this queue."))
    last = history[-1]
    done, err = attempt(
        lambda: svc.undo_answer(
            ctx,
            proj,
            utterance_id=last["id"],
            action=last["action"],
            labels=last["labels"],
            batch=last["batch"],
            text=last["text"],
            how=last.get("how"),
        )
    )
    state = {**state, "history": history[:-1]}
    if err or done is None:
        what = svc.describe(last["id"], last["action"], last["labels"])
        return render(ctx, proj, state, problem(f"Could not undo {what}: {err}"))
    msg, back = done
    current = state["item"]
    skip = last["action"] == "skip"
    state = {
        **state,
        "upcoming": [back, *([current["id"]] if current else []), *state["upcoming"]],
        "answered": state["answered"] if skip else state["answered"][:-1],
        "skipped": [i for i in state["skipped"] if i != last["id"]],
    }
    return render(ctx, proj, _advance(ctx, proj, state), ok(msg))


def take_match(ctx: AppContext, proj: str, state: dict[str, Any], query: str) -> tuple:
    """Enter in the filter (or a click on a match): take the intent that exactly ``query`` (the
    text typed when Enter was pressed) names, re-matched here, never a list shown earlier;
    refused, nothing stored, when it is empty, matches nothing or ties (multi-label: tick it)."""
    from core.labelling import best_match

    names, err = attempt(lambda: data_svc.intent_names(ctx, proj))
    name, err = (None, err) if err else attempt(lambda: best_match(query or "", names or []))
    if name is None:
        return render(ctx, proj, state, problem(f"{err} Nothing was stored."))
    item = state["item"]
    if item is not None and item["multi_label"]:
        picked = [*state["picked"], name] if name not in state["picked"] else state["picked"]
        return render(ctx, proj, {**state, "picked": picked})
    return act(ctx, "take", proj, state, [name])


def build_queue_tab(ctx: AppContext, project: gr.Dropdown) -> dict[str, Any]:
    """Lay out the Label tab and bind its keys. Returns its start event (to run on load)."""
    state = gr.State(_fresh())
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
    card = gr.HTML(_card(None, 0), elem_id="queue-card")
    with gr.Row(equal_height=True):
        buttons, examples = [], []
        for i in range(svc.SUGGESTIONS):
            with gr.Column(min_width=200):
                buttons.append(
                    gr.Button(
                        f"{i + 1}",
                        variant="primary" if i == 0 else "secondary",
                        elem_id=f"queue-s{i + 1}",
                        elem_classes=["queue-suggestion"],
                    )
                )
                examples.append(gr.Markdown(elem_classes=["queue-example"]))
    picked = gr.CheckboxGroup(
        [], label="Intents for this utterance (Enter saves them)", visible=False
    )
    with gr.Row(elem_id="queue-filter-row"):
        query = gr.Textbox(
            placeholder="Type to filter intents: Enter takes the one the text names, Esc goes back",
            show_label=False,
            container=False,
            scale=2,
            elem_id="queue-filter",
        )
        matches = gr.HTML("", elem_id="queue-matches", scale=3)
    with gr.Row(elem_id="queue-keys"):
        enter_btn = gr.Button("Enter · take 1", elem_id="queue-enter", size="sm")
        oos_btn = gr.Button(f"o · {svc.OUT_OF_SCOPE}", elem_id="queue-oos", size="sm")
        none_btn = gr.Button("n · no intent", elem_id="queue-none", size="sm")
        test_btn = gr.Button("t · to test", elem_id="queue-test", size="sm")
        skip_btn = gr.Button("s · skip", elem_id="queue-skip", size="sm")
        delete_btn = gr.Button("d · delete", elem_id="queue-delete", size="sm", variant="stop")
        undo_btn = gr.Button("u · undo", elem_id="queue-undo", size="sm")
        # Enter in the filter presses this with the text typed at that moment (queue_keys.js)
        commit_btn = gr.Button(
            "take typed", elem_id="queue-commit", elem_classes=["hidden-trigger"]
        )
    message = gr.Markdown(elem_id="queue-status")
    gr.Markdown(HELP, elem_classes=["queue-help"])

    # The message first: a refused write (a viewer) shows its refusal there.
    outputs = [message, state, card, *buttons, *examples, picked, progress]

    def write(fn: Any) -> Any:
        return guarded(ctx, "designer", outputs=len(outputs))(fn)

    quiet: dict[str, Any] = {"show_progress": "hidden", "api_visibility": "private"}
    # An answer's click is never skipped: Gradio's default ("once") drops a click while the
    # button's last event has not ended, and a key typed ahead is pressed the moment the answer
    # shows, before it ends. queue_keys.js sends one answer at a time (a click meanwhile, as a
    # double click, is dropped there).
    answers_kw: dict[str, Any] = {**quiet, "trigger_mode": "multiple"}
    start_btn.click(bind(start, ctx), [project, how, near], outputs, **quiet)
    how.change(
        lambda h, p: gr.update(
            visible=h == "near", choices=attempt(lambda: data_svc.intent_names(ctx, p))[0] or []
        ),
        [how, project],
        [near],
        **quiet,
    )
    changes = [
        button.click(write(bind(suggestion, ctx, i)), [project, state], outputs, **answers_kw)
        for i, button in enumerate(buttons)
    ]
    picked.input(lambda s, p: {**s, "picked": p}, [state, picked], [state], **quiet)
    changes.append(
        enter_btn.click(write(bind(enter, ctx)), [project, state], outputs, **answers_kw)
    )
    answers = ((oos_btn, "oos"), (none_btn, "none"), (test_btn, "test"), (delete_btn, "delete"))
    for button, action in answers:
        changes.append(
            button.click(
                write(bind(answer_with, ctx, action)), [project, state], outputs, **answers_kw
            )
        )
    skip_btn.click(bind(skip, ctx), [project, state], outputs, **answers_kw)
    changes.append(undo_btn.click(write(bind(undo, ctx)), [project, state], outputs, **answers_kw))
    # the list follows the latest text (a keystroke typed while it was computed is not dropped)
    query.input(
        bind(filter_intents, ctx), [project, query], [matches], trigger_mode="always_last", **quiet
    )
    # the text is the one the page captured when Enter was pressed, not the box's value now
    typed = "(p, s, q) => [p, s, window.__studioQueueTyped ?? '']"
    changes.append(
        commit_btn.click(
            write(bind(take_match, ctx)), [project, state, query], outputs, js=typed, **answers_kw
        )
    )
    project.change(bind(start, ctx), [project, how, near], outputs, **quiet)
    return {
        "start": (bind(start, ctx), [project, how, near], outputs),
        "js": _keys_js(),
        "changes": changes,
    }
