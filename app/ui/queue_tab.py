"""The Label tab: the labelling queue, one utterance at a time, driven by the keyboard.

Keys (when no text box has the focus): ``1``-``3`` take a suggestion (multi-label: toggle it),
``Enter`` takes the first, or ``out_of_scope`` when the model says so (multi-label: commits the
ticked intents), ``n`` no intent, ``t`` to test, ``s`` skip, ``d`` delete, ``u`` or ``Ctrl+Z`` undo; any other letter (or ``/``) starts the intent
filter, where ``Enter`` takes the best match and ``Esc`` goes back. Every key presses a visible
button, so the mouse does the same.
"""

from __future__ import annotations

import html
import json
import time
from dataclasses import asdict
from importlib import resources
from typing import Any

import gradio as gr

from app.context import AppContext
from app.services import data as data_svc
from app.services import queue as svc
from app.ui.common import attempt, bind, ok, problem
from app.ui.guard import guarded

HELP = (
    "**Keys** `1` `2` `3` take a suggestion · `Enter` the first (or out of scope) · type to "
    "filter intents (`/` first for names starting with n, s, t, d, u) · `n` no intent · `t` to test · `s` skip · "
    "`d` delete · `u` / `Ctrl+Z` undo"
)

# Pressing a key presses the button with this id (see _JS_KEYS).
KEYS = {
    "1": "queue-s1",
    "2": "queue-s2",
    "3": "queue-s3",
    "Enter": "queue-enter",
    "n": "queue-none",
    "t": "queue-test",
    "s": "queue-skip",
    "d": "queue-delete",
    "u": "queue-undo",
}


def _keys_js() -> str:
    """The keyboard handler (assets/queue_keys.js) with :data:`KEYS` filled in."""
    source = resources.files("assets").joinpath("queue_keys.js").read_text(encoding="utf-8")
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
        "history": [],  # the ids answered, last first out (undo shows them again)
        "seq": 0,
    }


def _card(item: dict[str, Any] | None, seq: int) -> str:
    if item is None:
        return (
            f"<div class='queue-card queue-empty' data-item='none' data-seq='{seq}'>"
            "Nothing left to label in this order. Import more utterances, or pick another "
            "order above.</div>"
        )
    note = ""
    if item.get("out_of_scope"):
        note = (
            "<div class='queue-oos'>Looks out of scope: no intent reaches its threshold "
            f"({item['threshold']:.2f}). <code>Enter</code> labels it {svc.OUT_OF_SCOPE}; "
            "<code>1</code>-<code>3</code> take an intent.</div>"
        )
    return (
        f"<div class='queue-card' data-item='{item['id']}' data-seq='{seq}'>"
        f"<div class='queue-text'>{html.escape(item['text'])}</div>{note}"
        f"<div class='queue-meta'>#{item['id']}{_current(item)}</div></div>"
    )


def _current(item: dict[str, Any]) -> str:
    """What a reviewed (labelled) utterance carries now."""
    now = item.get("current") or ()
    return f" · now: {html.escape(', '.join(now))}" if now else ""


def _progress(ctx: AppContext, proj: str, state: dict[str, Any]) -> str:
    done = state["answered"]
    rate = ""
    if len(done) >= 2 and done[-1] > done[0]:
        rate = f" · {60 * (len(done) - 1) / (done[-1] - done[0]):.0f} labels/min"
    if state["how"] == svc.REVIEW:  # labelled utterances: what is left is the flagged list
        left = len(state["upcoming"]) + (state["item"] is not None)
        return f"**{left}** flagged left to review · {len(done)} reviewed this session{rate}"
    unlabelled, err = attempt(lambda: svc.remaining(ctx, proj))
    if err:
        return problem(err)
    return f"**{unlabelled}** unlabelled left · {len(done)} answered this session{rate}"


def render(ctx: AppContext, proj: str, state: dict[str, Any], message: str = "") -> tuple:
    """Every output of the tab from the state: card, suggestions, picks, progress, message."""
    item = state["item"]
    suggestions = item["suggestions"] if item else []
    buttons, examples = [], []
    for i in range(svc.SUGGESTIONS):
        if i < len(suggestions):
            s = suggestions[i]
            ticked = "✓ " if s["intent"] in state["picked"] else ""
            # Enter's answer is the orange one: out of scope, Enter takes out_of_scope, not 1
            first = i == 0 and not item.get("out_of_scope")
            buttons.append(
                gr.update(
                    value=f"{i + 1} · {ticked}{s['intent']} · {s['score']:.2f}",
                    visible=True,
                    variant="primary" if first else "secondary",
                )
            )
            examples.append(gr.update(value=f"“{html.escape(s['example'])}”", visible=True))
        else:
            buttons.append(gr.update(visible=False))
            examples.append(gr.update(visible=False))
    multi = bool(item and item["multi_label"])
    picked = gr.update(
        value=list(state["picked"]),
        choices=sorted({*state["picked"], *(s["intent"] for s in suggestions)}),
        visible=multi,
    )
    return (
        message,
        state,
        _card(item, state["seq"]),
        *buttons,
        *examples,
        picked,
        _progress(ctx, proj, state) if proj else "",
    )


def _advance(ctx: AppContext, proj: str, state: dict[str, Any]) -> dict[str, Any]:
    found, ahead = svc.next_item(
        ctx,
        proj,
        state["upcoming"],
        state["how"],
        near=state["near"],
        # reviewing labelled rows: one answered (e.g. its intent confirmed) is not shown again
        exclude=[*state["skipped"], *(state["history"] if state["how"] == svc.REVIEW else [])],
    )
    item = {**asdict(found), "first": found.first_choice} if found else None
    state = {
        **state,
        "item": item,
        "upcoming": ahead,
        "picked": list(item["predicted"]) if item and item["multi_label"] else [],
        "seq": state["seq"] + 1,
    }
    return state


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
    """Answer the current item (``take``/``test``/``none``/``delete``) and show the next one."""
    item = state["item"]
    if item is None:
        return render(ctx, proj, state, problem("Nothing to answer: press Start."))
    msg, err = attempt(
        lambda: svc.answer(ctx, proj, item["id"], action, labels, expected_version=item["version"])
    )
    if err:
        review = state["how"] == svc.REVIEW
        if svc.item(ctx, proj, item["id"], review=review) is None:  # answered by someone else
            return render(ctx, proj, _advance(ctx, proj, state), problem(err))
        return render(ctx, proj, state, problem(err))
    state = {
        **state,
        "answered": [*state["answered"], time.time()][-200:],
        "history": [*state["history"], item["id"]][-200:],
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
    return render(ctx, proj, {**state, "picked": picked, "seq": state["seq"] + 1})


def enter(ctx: AppContext, proj: str, state: dict[str, Any]) -> tuple:
    item = state["item"]
    if item is not None and item["multi_label"]:
        return act(ctx, "take", proj, state, list(state["picked"]))
    if item is None or not item.get("first"):
        return render(ctx, proj, state, problem("No suggestion yet: type to filter intents."))
    return act(ctx, "take", proj, state, [item["first"]])


def answer_with(ctx: AppContext, action: str, proj: str, state: dict[str, Any]) -> tuple:
    """``t`` (the first suggestion or the ticked intents, into test), ``n``, ``d``."""
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
    state = {**state, "skipped": [*state["skipped"], item["id"]]}
    return render(
        ctx, proj, _advance(ctx, proj, state), ok(f"Skipped #{item['id']}.", notify=False)
    )


def undo(ctx: AppContext, proj: str, state: dict[str, Any]) -> tuple:
    """Undo the last change; the item answered last is shown again if it is unlabelled again."""
    msg, err = attempt(lambda: data_svc.undo(ctx, proj))
    if err:
        return render(ctx, proj, state, problem(err))
    current = state["item"]
    back = state["history"][-1:]
    ahead = [*back, *([current["id"]] if current else []), *state["upcoming"]]
    state = {
        **state,
        "upcoming": ahead,
        "history": state["history"][:-1],
        "answered": state["answered"][:-1],
    }
    return render(ctx, proj, _advance(ctx, proj, state), ok(msg or ""))


def filter_intents(ctx: AppContext, proj: str, query: str) -> Any:
    from core.labelling import match_intents

    if not proj or not query.strip():
        return gr.update(choices=[], value=None, visible=False)
    names, _ = attempt(lambda: data_svc.intent_names(ctx, proj))
    matches = match_intents(query, names or [])
    return gr.update(choices=matches, value=matches[0] if matches else None, visible=True)


def take_match(
    ctx: AppContext, proj: str, state: dict[str, Any], query: str, match: str | None
) -> tuple:
    """Enter in the filter (or a click on a match): take that intent (multi-label: tick it)."""
    from core.labelling import match_intents

    names, _ = attempt(lambda: data_svc.intent_names(ctx, proj))
    name = match or next(iter(match_intents(query, names or [])), None)
    if name is None:
        return (*render(ctx, proj, state, problem(f"No intent matches {query!r}.")), query)
    item = state["item"]
    if item is not None and item["multi_label"]:
        picked = [*state["picked"], name] if name not in state["picked"] else state["picked"]
        return (*render(ctx, proj, {**state, "picked": picked, "seq": state["seq"] + 1}), "")
    return (*act(ctx, "take", proj, state, [name]), "")


def build_queue_tab(ctx: AppContext, project: gr.Dropdown) -> dict[str, Any]:
    """Lay out the Label tab and bind its keys. Returns its start event (to run on load)."""
    state = gr.State(_fresh())
    with gr.Row(equal_height=True):
        how = gr.Dropdown(
            [(label, key) for key, label in svc.ORDERS.items()],
            value=svc.DEFAULT_ORDER,
            label="Order",
            scale=2,
            elem_id="queue-order",
        )
        near = gr.Dropdown([], label="Near intent", visible=False, scale=2)
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
    with gr.Row(equal_height=True):
        query = gr.Textbox(
            placeholder="Type to filter intents, Enter takes the best match, Esc goes back",
            show_label=False,
            scale=3,
            elem_id="queue-filter",
        )
        matches = gr.Radio([], show_label=False, visible=False, scale=5, elem_id="queue-matches")
    with gr.Row():
        enter_btn = gr.Button("Enter · take", elem_id="queue-enter", size="sm")
        none_btn = gr.Button("n · no intent", elem_id="queue-none", size="sm")
        test_btn = gr.Button("t · to test", elem_id="queue-test", size="sm")
        skip_btn = gr.Button("s · skip", elem_id="queue-skip", size="sm")
        delete_btn = gr.Button("d · delete", elem_id="queue-delete", size="sm", variant="stop")
        undo_btn = gr.Button("u · undo", elem_id="queue-undo", size="sm")
    message = gr.Markdown(elem_id="queue-status")
    gr.Markdown(HELP, elem_classes=["queue-help"])

    # The message first: a refused write (a viewer) shows its refusal there.
    outputs = [message, state, card, *buttons, *examples, picked, progress]

    def write(fn: Any) -> Any:
        return guarded(ctx, "designer", outputs=len(outputs))(fn)

    quiet: dict[str, Any] = {"show_progress": "hidden", "api_visibility": "private"}
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
        button.click(write(bind(suggestion, ctx, i)), [project, state], outputs, **quiet)
        for i, button in enumerate(buttons)
    ]
    picked.input(lambda s, p: {**s, "picked": p}, [state, picked], [state], **quiet)
    changes.append(enter_btn.click(write(bind(enter, ctx)), [project, state], outputs, **quiet))
    for button, action in ((none_btn, "none"), (test_btn, "test"), (delete_btn, "delete")):
        changes.append(
            button.click(write(bind(answer_with, ctx, action)), [project, state], outputs, **quiet)
        )
    skip_btn.click(bind(skip, ctx), [project, state], outputs, **quiet)
    changes.append(undo_btn.click(write(bind(undo, ctx)), [project, state], outputs, **quiet))
    query.input(bind(filter_intents, ctx), [project, query], [matches], **quiet)
    take = guarded(ctx, "designer", outputs=len(outputs) + 1)(bind(take_match, ctx))
    taken = query.submit(take, [project, state, query, matches], [*outputs, query], **quiet)
    taken.then(lambda: gr.update(choices=[], value=None, visible=False), None, [matches], **quiet)
    changes.append(taken)
    project.change(bind(start, ctx), [project, how, near], outputs, **quiet)
    return {
        "start": (bind(start, ctx), [project, how, near], outputs),
        "js": _keys_js(),
        "changes": changes,
    }
