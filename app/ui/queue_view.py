"""What the Label tab holds and shows: the queue's session (:class:`QueueSession`, one per browser
tab, in ``gr.State``), and every output of the tab from it (:class:`QueueView`, by
:func:`render`): the card (with the intents the filter's text is matched among, in the page:
assets/queue_keys.js), the suggestion keys and the progress line. Plain functions of the session
(see :mod:`app.ui.queue_tab`)."""

from __future__ import annotations

import dataclasses
import html
import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import gradio as gr

from app.access import ProjectHandle
from app.services.labelling import team as team_svc
from app.services.projects import projects as projects_svc
from app.services.queue import queue as svc
from app.ui.common import attempt, md_text, problem
from storage.db import Database

_RENDERS = itertools.count(1)  # every card's data-seq (render)
# What the card says until the server's answer to a start shows (the page's own first card, a
# Start / reorder, another project): never "nothing left", which only a known empty queue says.
LOADING = "Loading the next card: the model scores the utterances waiting for a label…"
ENTER_TAKES = "Enter · take 1"  # the Enter key's button, unless the card is out of scope
MINE_SAYS = "These are your answers under review: a reviewer who did not answer decides each."
HISTORY = 200  # answers (and skips) of a session kept for undo and the labels/min


@dataclass(frozen=True)
class Answered:
    """One answer (or skip) given in this queue: what undo (``Ctrl+Z``) takes back and shows again."""

    id: int
    action: str  # take, test, none, delete, oos, or skip
    labels: tuple[str, ...] = ()
    how: str = svc.DEFAULT_ORDER
    batch: str | None = None  # its own change in the audit log (None: a skip changed nothing)
    text: str = ""


@dataclass(frozen=True)
class QueueSession:
    """The Label tab's state: the order and what comes next, the card on screen, and this
    session's answers."""

    how: str = svc.DEFAULT_ORDER
    near: str | None = None
    upcoming: tuple[int, ...] = ()
    skipped: tuple[int, ...] = ()
    item: svc.QueueItem | None = None
    picked: tuple[str, ...] = ()  # multi-label: the intents ticked on this card
    answered: tuple[float, ...] = ()  # when each answer of this session was given (labels/min)
    history: tuple[Answered, ...] = ()  # last first out: what undo takes back
    # a refused change to a test row (review order): the same answer again confirms it
    confirm: Answered | None = None
    seq: int = 0
    # the progress line's counts, read with the last card: (unlabelled, (assigned, open) of a
    # team's annotator or None)
    counts: tuple[int, tuple[int, int] | None] | None = None
    # the project's intents, read with the last card: the page matches a typed name among them
    intents: tuple[str, ...] = ()

    def but(self, **changes: Any) -> QueueSession:
        return dataclasses.replace(self, **changes)


class QueueView(NamedTuple):
    """Every output of the Label tab, in the order of its outputs list."""

    message: Any  # the status line's words, or gr.skip(): left as it is (a model's refresh)
    state: QueueSession
    card: str
    key1: Any
    key2: Any
    key3: Any
    example1: Any
    example2: Any
    example3: Any
    picked: Any
    progress: str
    enter_key: Any  # what Enter answers on this card
    oos_key: Any


def refused(message: str) -> str:
    """A refusal in the tab's status line, never a toast: a key's answer is said where the
    annotator looks, and toasts of quick refusals would pile up over the card."""
    return problem(message, notify=False)


def _card(
    item: svc.QueueItem | None,
    seq: int,
    *,
    empty_project: bool = False,
    how: str = "",
    intents: Sequence[str] = (),
    skipped: int = 0,
    loading: bool = False,
) -> str:
    """The card, carrying the project's ``intents`` (``data-intents``, JSON): the page matches
    the filter's text among them at each key (assets/queue_keys.js). ``loading``: no answer
    from the queue yet (:data:`LOADING`)."""
    names = html.escape(json.dumps(list(intents), ensure_ascii=False), quote=True)
    div = f"<div class='queue-card{{}}' data-item='{{}}' data-seq='{seq}' data-intents='{names}'>"
    if loading:
        return div.format(" queue-empty queue-loading", "none") + f"{LOADING}</div>"
    if item is None and empty_project:  # a new project: the way in is the import
        return (
            div.format(" queue-empty", "none")
            + "No utterances yet: import a file in the Data tab (Import panel), or add one there."
            "</div>"
        )
    if item is None and skipped:  # the ones skipped are still there: say how to see them
        return (
            div.format(" queue-empty", "none")
            + f"You skipped the {skipped} left in this order: they still wait for an answer. "
            "Press <b>Start / reorder</b> to see them again.</div>"
        )
    if item is None:
        return (
            div.format(" queue-empty", "none")
            + "Nothing left to label in this order. Import more utterances, or pick another "
            "order above.</div>"
        )
    note = ""
    if item.out_of_scope and how != svc.MINE:  # no key of hers decides there
        keys = (
            f"<code>Enter</code> (or <code>0</code>) labels it {svc.OUT_OF_SCOPE}; "
            "<code>1</code>-<code>3</code> take an intent."
            if item.enter_is_out_of_scope
            else f"<code>0</code> labels it {svc.OUT_OF_SCOPE}; <code>Enter</code> or "
            "<code>1</code>-<code>3</code> take an intent."
        )
        note = (
            "<div class='queue-oos'>Looks out of scope: no intent reaches its threshold "
            f"({item.threshold or 0:.2f}). {keys}</div>"
        )
    if item.answers:  # a disagreement to settle: who said what
        said = " · ".join(f"<b>{html.escape(a)}</b>" for a in item.answers)
        then = (
            f"{MINE_SAYS} <code>Space</code> shows the next."
            if how == svc.MINE
            else "Take one (1-3, 0), or type another intent."
        )
        note += f"<div class='queue-answers'>Annotators said: {said}. {then}</div>"
    return (
        div.format("", item.id) + f"<div class='queue-text'>{html.escape(item.text)}</div>{note}"
        f"<div class='queue-meta'>#{item.id}{_current(item)}</div></div>"
    )


def _is_empty(db: Database, p: ProjectHandle) -> bool:
    """Whether the project holds no utterance at all (in any split)."""
    info = projects_svc.summary(db, p)
    return info.n_train + info.n_test + info.n_unlabelled == 0


def _current(item: svc.QueueItem) -> str:
    """What a reviewed (labelled) utterance carries now, and a test row said plainly (changing
    it takes the same answer twice)."""
    if not item.current:
        return ""
    test = (
        " · <span class='queue-test-row'>test row: it reports the accuracy, a change takes the "
        "same key twice</span>"
        if item.split == "test"
        else ""
    )
    return f" · now: {html.escape(', '.join(item.current))}{test}"


def _progress(db: Database, p: ProjectHandle, state: QueueSession) -> str:
    done = state.answered
    rate = ""
    if len(done) >= 2 and done[-1] > done[0]:
        rate = f" · {60 * (len(done) - 1) / (done[-1] - done[0]):.0f} labels/min"
    if state.how == svc.MINE:
        left = len(state.upcoming) + (state.item is not None)
        return f"**{left}** of your answers under review (another reviewer decides)"
    if state.how in (svc.REVIEW, svc.DISPUTES):  # what is left is the listed ones
        left = len(state.upcoming) + (state.item is not None)
        what = "flagged" if state.how == svc.REVIEW else "disagreements"
        # a skipped one is still to review: never a bare "0 left" while some wait behind Space
        skipped = (
            f" in this pass · **{len(state.skipped)}** skipped (Start / reorder shows them again)"
            if state.skipped
            else ""
        )
        return (
            f"**{left}** {what} left to review{skipped} · {len(done)} reviewed this session{rate}"
        )
    if state.counts is not None:  # read with the card
        unlabelled, mine = state.counts
    else:
        mine, err = attempt(lambda: team_svc.my_progress(db, p))
        found, err = (None, err) if err else attempt(lambda: svc.remaining(db, p))
        if err or found is None:
            return refused(err or "")
        unlabelled = found
    # the rows still being encoded, and the space the queue orders in meanwhile (issue 72)
    said = f" · {state.item.encoding}" if state.item is not None and state.item.encoding else ""
    if mine is not None:  # a team project: the annotator's own items
        assigned, left = mine
        return f"**{left}** of your {assigned} left · {len(done)} answered this session{rate}{said}"
    return f"**{unlabelled}** unlabelled left · {len(done)} answered this session{rate}{said}"


def pick(state: QueueSession, picked: list[str]) -> QueueSession:
    """Multi-label: the intents ticked by a click on the checkboxes."""
    return state.but(picked=tuple(picked))


def render(
    db: Database, p: ProjectHandle | None, state: QueueSession, message: str = ""
) -> QueueView:
    """Every output of the tab from the session: card, suggestions, picks, progress, message.
    Each render is a new ``data-seq`` on the card, so the page knows the answer arrived (a
    refusal included) and lets the next key through. The number is unique in the process, not
    per queue: a fresh queue (a Start, a project picked) counting from 1 again could show the
    number an answer on screen already has, and the page would wait for an answer that came."""
    state = state.but(seq=next(_RENDERS))
    item = state.item
    suggestions = item.suggestions if item else ()
    oos = bool(item and item.enter_is_out_of_scope)
    keys, examples = [], []
    for i in range(3):  # the tab's three keys (svc.SUGGESTIONS)
        if i < len(suggestions):
            s = suggestions[i]
            ticked = "✓ " if s.intent in state.picked else ""
            keys.append(  # Enter's answer is the orange one: the first, or out of scope
                gr.update(
                    value=f"{i + 1} · {ticked}{s.intent} · {s.score:.2f}",
                    visible=True,
                    variant="primary" if i == 0 and not oos else "secondary",
                )
            )
            examples.append(gr.update(value=f"“{md_text(s.example)}”", visible=True))
        else:
            keys.append(gr.update(visible=False))
            examples.append(gr.update(visible=False))
    multi = bool(item and item.multi_label)
    picked = gr.update(
        value=list(state.picked),
        choices=sorted({*state.picked, *(s.intent for s in suggestions)}),
        visible=multi,
    )
    empty = item is None and p is not None and _is_empty(db, p)
    return QueueView(
        message,
        state,
        _card(
            item,
            state.seq,
            empty_project=empty,
            how=state.how,
            intents=state.intents,
            skipped=len(state.skipped),
        ),
        keys[0],
        keys[1],
        keys[2],
        examples[0],
        examples[1],
        examples[2],
        picked,
        _progress(db, p, state) if p is not None else "",
        gr.update(value=f"Enter · {svc.OUT_OF_SCOPE}" if oos else ENTER_TAKES),
        gr.update(variant="primary" if oos else "secondary"),
    )
