"""The Label tab: the labelling queue, one utterance at a time, driven by the keyboard (the keys:
:mod:`app.ui.queue_keys`; no letter is a command, a letter types an intent's name). Every key
presses a visible button, so the mouse does the same (a click on a listed match takes it); after
every answer the focus is back on the card.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from typing import Any

import gradio as gr

from app.access import ProjectHandle
from app.access.actions import LABEL
from app.services.labelling import data as data_svc
from app.services.queue import queue as svc
from app.serving.live import LivePools
from app.serving.training_queue import TrainingQueue
from app.ui import queue_starts as starts
from app.ui.common import attempt, bind, ok
from app.ui.guard import guarded
from app.ui.queue_activity import follow_work
from app.ui.queue_keys import HELP, keys_js
from app.ui.queue_model import follow_model, model_js, model_line
from app.ui.queue_view import (
    HISTORY,
    LOADING,
    MINE_SAYS,
    Answered,
    QueueSession,
    QueueView,
    _card,
    pick,
    refused,
    render,
)
from storage.db import Database


def _advance(
    live: LivePools, p: ProjectHandle, state: QueueSession, ahead: svc.Ahead | None = None
) -> QueueSession:
    """The session with the next card. ``ahead``: what it needs, read with the answer just
    written (without it, read now in one transaction)."""
    if ahead is None:
        with live.db.session() as s:
            ahead = svc.read_ahead(s, p, state.upcoming)
    reviewed = [h.id for h in state.history] if state.how == svc.REVIEW else []
    found, upcoming = svc.next_item(
        live,
        p,
        state.upcoming,
        state.how,
        near=state.near,
        # reviewing labelled rows: one answered (e.g. its intent confirmed) is not shown again
        exclude=[*state.skipped, *reviewed],
        ahead=ahead,
    )
    picked = found.predicted if found is not None and found.multi_label else ()
    return state.but(
        item=found,
        upcoming=tuple(upcoming),
        picked=tuple(picked),
        counts=(ahead.remaining, ahead.mine),
        intents=ahead.intents,
    )


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
        state = _advance(live, p, state)
    except ValueError as exc:  # a refusal (an unknown intent to label near); a bug goes on
        return render(live.db, p, state, refused(str(exc)))
    return render(live.db, p, state)


def act(
    live: LivePools, action: str, p: ProjectHandle, state: QueueSession, labels: list[str]
) -> QueueView:
    """Answer the current item (``take``/``test``/``none``/``delete``/``oos``) and show the next
    one; the answer joins this queue's history under its own batch (what undo takes back)."""
    item = state.item
    if item is None:
        return render(live.db, p, state, refused("Nothing to answer: press Start."))
    if state.how == svc.MINE:  # her own answers, shown: a reviewer who did not answer decides
        return render(live.db, p, state, refused(f"{MINE_SAYS} Nothing was stored."))
    this = Answered(item.id, action, tuple(labels), state.how)
    confirmed = state.confirm == this
    state = state.but(confirm=None)
    batch = str(uuid.uuid4())  # this answer's own change in the audit log: what undo takes back

    def answer() -> tuple[str, svc.Ahead | None]:
        """The answer's message and what the next card needs (None: a test row's change still
        to confirm)."""
        try:
            return svc.answer_then(
                live,
                p,
                item.id,
                action,
                labels,
                expected_version=item.version,
                batch=batch,
                confirm_test=confirmed,
                how=state.how,
                upcoming=state.upcoming,
                served=item.predicted,  # the model's decision on this card
            )
        except data_svc.UnconfirmedTestChange as exc:
            return str(exc), None

    done, err = attempt(answer)
    msg, ahead = done or ("", None)
    ask = done is not None and ahead is None
    if ask:  # the same answer again (the same key) confirms it; anything else forgets it
        again = (
            f"{msg} Give the same answer again (the same key) to change it anyway; Space skips it."
        )
        return render(live.db, p, state.but(confirm=this), refused(again))
    if err:
        review = state.how == svc.REVIEW
        listed = state.how in (svc.DISPUTES, svc.MINE)
        gone = listed or svc.item(live, p, item.id, review=review) is None
        if gone:  # answered by someone else (a dispute: decided by another reviewer)
            return render(live.db, p, _advance(live, p, state), refused(err))
        return render(live.db, p, state, refused(err))
    entry = dataclasses.replace(this, batch=batch, text=item.text)
    state = state.but(
        answered=(*state.answered, time.time())[-HISTORY:],
        history=(*state.history, entry)[-HISTORY:],
    )
    return render(live.db, p, _advance(live, p, state, ahead), ok(msg or "", notify=False))


def suggestion(live: LivePools, index: int, p: ProjectHandle, state: QueueSession) -> QueueView:
    """Key ``index + 1``: take that suggestion, or (multi-label) tick or untick it."""
    item = state.item
    if item is None or index >= len(item.suggestions):
        return render(live.db, p, state, refused("There is no such suggestion."))
    name = item.suggestions[index].intent
    if not item.multi_label:
        return act(live, "take", p, state, [name])
    picked = [x for x in state.picked if x != name]
    picked += [] if name in state.picked else [name]
    return render(live.db, p, state.but(picked=tuple(picked)))


def enter(live: LivePools, p: ProjectHandle, state: QueueSession) -> QueueView:
    """``Enter``: the first suggestion; on a card flagged out of scope, out of scope (the card
    and the keys say so: :attr:`app.services.queue.queue.QueueItem.enter_is_out_of_scope`);
    multi-label: the ticked intents."""
    item = state.item
    if item is not None and item.multi_label:
        return act(live, "take", p, state, list(state.picked))
    if item is not None and item.enter_is_out_of_scope:
        return act(live, "oos", p, state, [])
    if item is None or not item.first_choice:
        return render(live.db, p, state, refused("No suggestion yet: type an intent's name."))
    return act(live, "take", p, state, [item.first_choice])


def answer_with(live: LivePools, action: str, p: ProjectHandle, state: QueueSession) -> QueueView:
    """``Shift+Enter`` (the first suggestion or the ticked intents, into test, never out of
    scope), ``0`` (out of scope), ``-`` (no intent), ``Delete``."""
    item = state.item
    labels: list[str] = []
    if action == "test" and item is not None:
        first = [item.first_choice] if item.first_choice else []
        labels = list(state.picked) if item.multi_label else first
    return act(live, action, p, state, labels)


def skip(live: LivePools, p: ProjectHandle, state: QueueSession) -> QueueView:
    """``Space``: the next card; on a team annotator's own item, her answer (stored, as an
    overlap item's second opinion counts it; undo takes it back)."""
    item = state.item
    if item is None:
        return render(live.db, p, state)
    batch, said, ahead = None, f"Skipped #{item.id}.", None
    mine = state.counts is not None and state.counts[1] is not None  # she has items assigned
    if mine and state.how not in svc.LISTED and p.may(LABEL.role) and not p.read_only:
        tried = str(uuid.uuid4())
        done, err = attempt(
            lambda: svc.answer_then(
                live, p, item.id, "skip", batch=tried, how=state.how, upcoming=state.upcoming
            )
        )
        if err or done is None:
            return render(live.db, p, state, refused(err or ""))
        stored, ahead = done
        batch, said = (tried, stored) if stored else (None, said)
    done_ = Answered(item.id, "skip", (), state.how, batch, item.text)
    state = state.but(skipped=(*state.skipped, item.id), history=(*state.history, done_)[-HISTORY:])
    return render(live.db, p, _advance(live, p, state, ahead), ok(said, notify=False))


def undo(live: LivePools, p: ProjectHandle, state: QueueSession) -> QueueView:
    """Take back this queue's last answer or skip (never another change in the project) and show
    its utterance again, saying what was undone; when this queue has nothing left, say so."""
    if not state.history:
        return render(live.db, p, state, refused("Nothing left to undo in this queue."))
    last = state.history[-1]
    done, err = attempt(
        lambda: svc.undo_answer(
            live.db,
            p,
            utterance_id=last.id,
            action=last.action,
            labels=last.labels,
            batch=last.batch,
            text=last.text,
            how=last.how,
        )
    )
    state = state.but(history=state.history[:-1])
    if err or done is None:
        what = svc.describe(last.id, last.action, last.labels)
        return render(live.db, p, state, refused(f"Could not undo {what}: {err}"))
    msg, back = done
    current = state.item
    state = state.but(
        upcoming=(back, *([current.id] if current else []), *state.upcoming),
        answered=state.answered if last.action == "skip" else state.answered[:-1],
        skipped=tuple(i for i in state.skipped if i != last.id),
    )
    return render(live.db, p, _advance(live, p, state), ok(msg, notify=False))


def take_match(live: LivePools, p: ProjectHandle, state: QueueSession, query: str) -> QueueView:
    """Enter in the filter (or a click on a match): take the intent that exactly ``query`` (the
    text typed when Enter was pressed) names, re-matched here, never a list shown earlier;
    refused, nothing stored, when it is empty, ties, or matches nothing (as any unknown name:
    :func:`app.services.queue.queue.typed_intent`) (multi-label: tick it)."""
    name, err = attempt(lambda: svc.typed_intent(live.db, p, query or ""))
    if name is None:
        return render(live.db, p, state, refused(err or ""))
    item = state.item
    if item is not None and item.multi_label:
        picked = state.picked if name in state.picked else (*state.picked, name)
        return render(live.db, p, state.but(picked=picked))
    return act(live, "take", p, state, [name])


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
