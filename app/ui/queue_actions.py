"""What the Label tab's keys do to its queue: answer the card in front of the person (a
suggestion's number, ``Enter``, ``Shift+Enter``, ``0``, ``-``, ``Delete``, an intent's typed name),
skip it, or undo this queue's last answer; then :func:`advance` shows the next card (which a start
shows first: :mod:`app.ui.queue_tab`). Each takes and returns the page's :class:`QueueSession`;
every answer is its own batch in the audit log, what undo takes back.
"""

from __future__ import annotations

import dataclasses
import time
import uuid

from app.access import ProjectHandle
from app.access.actions import LABEL
from app.services.labelling import data as data_svc
from app.services.queue import queue as svc
from app.serving.live import LivePools
from app.ui.common import attempt, ok
from app.ui.queue_view import HISTORY, MINE_SAYS, Answered, QueueSession, QueueView, refused, render


def advance(
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
            return render(live.db, p, advance(live, p, state), refused(err))
        return render(live.db, p, state, refused(err))
    entry = dataclasses.replace(this, batch=batch, text=item.text)
    state = state.but(
        answered=(*state.answered, time.time())[-HISTORY:],
        history=(*state.history, entry)[-HISTORY:],
    )
    return render(live.db, p, advance(live, p, state, ahead), ok(msg or "", notify=False))


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
    return render(live.db, p, advance(live, p, state, ahead), ok(said, notify=False))


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
    return render(live.db, p, advance(live, p, state), ok(msg, notify=False))


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
