"""The labelling queue's answers: each written in one transaction that also reads what the next
card needs (:class:`Ahead`), so a key press is two transactions in all (the request's project,
resolved at its edge, and this one) and the live pool takes the answer without reading it back
(:meth:`app.serving.live.LivePools.pool_after`); and the queue's undo of one answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ParamSpec

from app.access import ProjectHandle, writing
from app.services.labelling import data as data_svc
from app.services.labelling import history
from app.services.labelling import team as team_svc
from app.services.queue.queue_order import CHUNK, DISPUTES
from app.serving.live import LivePools
from core.evaluation.oos import OUT_OF_SCOPE
from storage import team as team_repo
from storage.db import Database, Session
from storage.errors import NotFoundError
from storage.pool_state import pool_stamp
from storage.projects import intents_by_name
from storage.utterances import UtteranceRow, count_utterances, find_by_text, list_utterances

ACTIONS = ("take", "test", "none", "delete", "oos", "skip")


P = ParamSpec("P")


@dataclass(frozen=True)
class Ahead:
    """What the next card needs, read in the transaction that wrote an answer (or in one read):
    the upcoming rows (by id; an id missing was deleted), the utterances still unlabelled, the
    acting annotator's (assigned, open) items in a team project, the pool's stamp, and the
    project's intents (what a typed name is matched among, in the page)."""

    rows: dict[int, UtteranceRow]
    read: tuple[int, ...]  # the ids looked up (the upcoming ones, up to CHUNK)
    remaining: int
    mine: tuple[int, int] | None
    stamp: tuple[int, ...]
    intents: tuple[str, ...] = ()


def read_ahead(s: Session, p: ProjectHandle, upcoming: Sequence[int]) -> Ahead:
    """:class:`Ahead` within the session ``s``: a few statements."""
    ids = tuple(dict.fromkeys(upcoming))[:CHUNK]
    rows = {r.id: r for r in list_utterances(s, p.id, ids=list(ids))} if ids else {}
    mine = None
    if p.actor.id is not None:
        assigned = team_repo.assigned_count(s, p.id, p.actor.id)
        if assigned:
            mine = (assigned, len(team_repo.open_for(s, p.id, p.actor.id)))
    remaining = count_utterances(s, p.id, split="unlabelled")
    intents = tuple(sorted(intents_by_name(s, p.id)))  # as data.intent_names lists them
    return Ahead(rows, ids, remaining, mine, pool_stamp(s, p.id), intents)


def answer_then(
    live: LivePools,
    p: ProjectHandle,
    utterance_id: int,
    action: str,
    labels: Sequence[str] = (),
    *,
    expected_version: int | None = None,
    batch: str | None = None,
    confirm_test: bool = False,
    how: str | None = None,
    upcoming: Sequence[int] = (),
    served: Sequence[str] | None = None,
) -> tuple[str, Ahead]:
    """Write the annotator's answer and say what happened, in one transaction that also reads
    what the next card needs (:class:`Ahead`, of the ``upcoming`` ids); the live pool takes the
    answer without reading it back. ``take``: the labels (into `train`); ``test``: the labels,
    into `test`; ``none``: reviewed, no intent (kept in `train` without an intent, out of the
    queue); ``delete``: removed (undo brings it back); ``oos``: labelled out of scope (into
    `train`, where it teaches the threshold); ``skip``: a team annotator's skip of an item
    assigned to her is her answer (stored: :mod:`app.services.labelling.team`), anyone else's stores
    nothing (the message is then empty). ``batch`` names the change in the audit log, so
    :func:`undo_answer` takes back this answer and nothing else. An answer that would change a
    `test` row (the review order shows labelled ones) is refused unless ``confirm_test``
    (:class:`app.services.labelling.data.UnconfirmedTestChange`).

    In a team project (:mod:`app.services.labelling.team`) ``take`` and ``oos`` on an item assigned to
    you are your answer (accepted alone, or on agreement); on the team's other items they are
    refused (:mod:`app.access.policy`); in the :data:`DISPUTES` order (``how``) they are the
    reviewer's decision. ``served``: what the model that served decided on the card answered
    (kept with the label: an automatic retrain counts a label the model got wrong twice)."""
    if action not in ACTIONS:
        raise ValueError(f"Unknown answer {action!r}; use one of {', '.join(ACTIONS)}.")
    names = [OUT_OF_SCOPE] if action == "oos" else list(labels)
    if action in ("take", "test") and not names:
        raise ValueError("Pick an intent first (1-3, or type its name).")
    with writing(live.db, p) as s:
        before = pool_stamp(s, p.id)
        message = _answer_in(
            s, p, utterance_id, action, names, expected_version, batch, confirm_test, how, served
        )
        now = {r.id: r for r in list_utterances(s, p.id, ids=[utterance_id])}
        ahead = read_ahead(s, p, upcoming)
    live.pool_after(p.id, before, ahead.stamp, {utterance_id: now.get(utterance_id)})
    return message, ahead


def _message_of(then: Callable[P, tuple[str, Ahead]]) -> Callable[P, str]:
    def said(*args: P.args, **kw: P.kwargs) -> str:
        return then(*args, **kw)[0]

    return said


# Write the annotator's answer and say what happened: answer_then's message, its parameters.
answer = _message_of(answer_then)


def _answer_in(
    s: Session,
    p: ProjectHandle,
    utterance_id: int,
    action: str,
    names: list[str],
    expected_version: int | None,
    batch: str | None,
    confirm_test: bool,
    how: str | None,
    served: Sequence[str] | None = None,
) -> str:
    if action in ("take", "oos", "skip"):
        if how == DISPUTES and action != "skip":
            return team_svc.decide_in(s, p, utterance_id, names, batch=batch)
        asked = team_repo.assignees(s, p.id, [utterance_id]).get(utterance_id, [])
        if p.actor.id is not None and p.actor.id in asked and how != DISPUTES:
            kind = {"oos": "oos", "skip": "skip"}.get(action, "label")
            return team_svc.submit_in(s, p, utterance_id, kind, names, batch=batch)
    if action == "skip":
        return ""  # not an item of hers: nothing to store
    if action == "delete":
        data_svc.delete_in(s, p, utterance_id, batch=batch, confirm_test=confirm_test)
        return f"Deleted #{utterance_id} (Ctrl+Z to undo)."
    split = {"take": None, "oos": None, "test": "test", "none": "train"}[action]
    row = data_svc.label_in(
        s,
        p,
        utterance_id,
        [] if action == "none" else names,
        split=split,
        expected_version=expected_version,
        batch=batch,
        confirm_test=confirm_test,
        served=served,
    )
    return f"#{utterance_id} → {', '.join(row.labels) or 'no intent'} ({row.split})."


def describe(utterance_id: int, action: str, labels: Sequence[str] = ()) -> str:
    """One answer of the queue in words (what an undo says it took back).

    Example:
        >>> describe(123, "take", ["card_arrival"]), describe(7, "delete")
        ('#123 labelled card_arrival', '#7 deleted')
    """
    names = ", ".join(labels) or "no intent"
    return {
        "take": f"#{utterance_id} labelled {names}",
        "oos": f"#{utterance_id} labelled {OUT_OF_SCOPE}",
        "test": f"#{utterance_id} labelled {names} into test",
        "none": f"#{utterance_id} marked no intent",
        "delete": f"#{utterance_id} deleted",
        "skip": f"#{utterance_id} skipped",
    }[action]


def undo_answer(
    db: Database,
    p: ProjectHandle,
    *,
    utterance_id: int,
    action: str,
    labels: Sequence[str] = (),
    batch: str | None = None,
    text: str = "",
    how: str | None = None,
) -> tuple[str, int]:
    """Take back one answer given in the queue (its own batch, never a later or another
    person's change; refused, nothing changed, when someone edited the utterance since). Returns
    what it undid and the utterance's id now: a deleted utterance comes back under its own id
    (under a new one only where its id was taken meanwhile), and the queue shows it again. A
    skip that stored nothing is only shown again; a team annotator's stored skip is taken back."""
    what = describe(utterance_id, action, labels)
    if batch is None:  # a skip that stored nothing
        return f"Undid: {what}.", utterance_id
    team_answer = how != DISPUTES and action in ("take", "oos", "skip")
    if team_answer and team_svc.withdraw(db, p, utterance_id, batch):
        return f"Undid: {what}.", utterance_id  # the answer and the label it made, if any
    if action == "skip":
        return f"Undid: {what}.", utterance_id
    try:
        history.undo_batch(db, p, batch)
    except NotFoundError:  # the answer wrote nothing (the utterance had those labels already)
        return f"Undid: {what} (it had changed nothing).", utterance_id
    if action != "delete":
        return f"Undid: {what}.", utterance_id
    with db.session() as s:
        back = find_by_text(s, p.id, text)
    if back is None:
        raise NotFoundError(f"#{utterance_id} was restored but cannot be found again.")
    if back != utterance_id:  # its id went to an utterance added meanwhile (SQLite reuses it)
        return f"Undid: {what} (back as #{back}: #{utterance_id} was taken meanwhile).", back
    return f"Undid: {what}.", back
