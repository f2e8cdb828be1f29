"""Labelling as a team: an admin splits unlabelled utterances between annotators (members of the
project with the designer role) with a share labelled twice (the overlap); each annotator's
answer is stored apart from the utterance's accepted label (what training, evaluation and export
use); agreement is measured on the overlap; a reviewer settles the disagreements.

The rules (who may change a team's item, at every door, is :mod:`app.access.policy`'s):

* an answer to an item only one annotator was given is accepted at once (as in single-user
  mode); their skip releases the item (anyone's again);
* an overlap item is accepted when every annotator on it gave the same answer; otherwise (one
  disagrees or skipped) it waits in the review queue until a reviewer who did not answer it
  decides;
* answers are final once the item is accepted (the annotator whose answer accepted it may still
  take it back at once, with the label it made); only an admin changes an accepted item;
* a reviewer's decision is a label like any other: in the audit log under its own batch, and
  undone like one (the item then waits for review again);
* the model's suggestion is shown to the reviewer, never counted as a vote;
* a project nobody was assigned in behaves exactly as before (nothing here is consulted).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.access import ProjectHandle, for_purpose, item_refusal, team_state, writing
from app.access.actions import ASSIGN
from app.access.policy import answer_value, project_role
from app.services.labelling import data as data_svc
from app.services.labelling import history
from core.retrieval.scope import OUT_OF_SCOPE
from storage import team as repo
from storage.db import Database, Session
from storage.errors import NotFoundError
from storage.guard import ItemLockedError
from storage.members import member_role
from storage.unknown_intents import check_known
from storage.users import active_user, list_users
from storage.utterances import list_utterances

OVERLAP_DEFAULT = 0.1
ACTIONS = repo.ANSWER_ACTIONS


@dataclass(frozen=True)
class Given:
    """One annotator's answer as a reviewer sees it."""

    annotator: str
    action: str
    intents: tuple[str, ...]

    def shown(self) -> str:
        if self.action == "label":
            return ", ".join(self.intents)
        return OUT_OF_SCOPE if self.action == "oos" else "skipped"


@dataclass(frozen=True)
class Dispute:
    """An overlap item every annotator answered and not all alike, still without a label."""

    id: int
    text: str
    answers: tuple[Given, ...]


def _may_label(s: Any, p: ProjectHandle, name: str) -> int:
    """The id of the user ``name`` if they may label in the project (an active user whose
    role there is designer or admin); ValueError saying why not."""
    try:
        user = active_user(s, name)
    except (NotFoundError, PermissionError) as exc:
        raise ValueError(f"{name!r} is not an active user: {exc}") from None
    role = project_role(user.role, False, member_role(s, p.id, user.id))
    if role is None:
        raise ValueError(
            f"{name} is no member of {p.name!r}: add them first (Team tab, or "
            f"`intent-studio members add --project ... {name}`)."
        )
    if role == "viewer":
        raise ValueError(f"{name} is a viewer in {p.name!r}: annotators need the designer role.")
    return int(user.id)


def assign(
    db: Database,
    p: ProjectHandle,
    annotators: Sequence[str],
    *,
    overlap: float = OVERLAP_DEFAULT,
    search: str | None = None,
    limit: int | None = None,
) -> dict[str, int]:
    """Split the unlabelled utterances nobody has yet (containing ``search``; the first
    ``limit``) between ``annotators`` evenly; an ``overlap`` share of them, spread evenly, goes
    to a second annotator too (every annotator ends with the same number, give or take one).
    Returns annotator -> utterances given (and ``overlap`` -> how many went to two). Needs an
    admin; every annotator must have the designer role in the project."""
    p.require_action(ASSIGN)
    names = list(dict.fromkeys(a.strip() for a in annotators if a.strip()))
    if not names:
        raise ValueError("Name at least one annotator.")
    if not 0 <= overlap <= 1:
        raise ValueError(f"The overlap is a share between 0 and 1, not {overlap:g}.")
    if overlap and len(names) < 2:
        raise ValueError("An overlap needs two annotators or more.")
    with writing(db, p) as s:
        users = [_may_label(s, p, name) for name in names]
        ids = repo.unassigned_unlabelled(s, p.id, search=search, limit=limit)
        plan: dict[int, list[int]] = {}
        given = dict.fromkeys(names, 0)
        shared = 0
        n = len(names)
        for i, uid in enumerate(ids):  # whoever has the fewest so far (in turn on a tie)
            first = min(range(n), key=lambda j: (given[names[j]], (j - i) % n))
            plan[uid] = [users[first]]
            given[names[first]] += 1
            if int((i + 1) * overlap) > int(i * overlap):  # evenly spread
                others = [(first + k) % n for k in range(1, n)]  # the same for the second
                second = min(others, key=lambda j: given[names[j]])
                plan[uid].append(users[second])
                given[names[second]] += 1
                shared += 1
        repo.add_assignments(s, p.id, plan)
    return {**given, "overlap": shared}


def is_team_project(db: Database, p: ProjectHandle) -> bool:
    """Whether anyone was assigned utterances in the project."""
    with db.session() as s:
        return bool(repo.progress(s, p.id))


def open_items(db: Database, p: ProjectHandle) -> list[int]:
    """The acting annotator's assigned items they have not answered and nobody labelled (file
    order)."""
    with db.session() as s:
        return open_items_in(s, p)


def open_items_in(s: Session, p: ProjectHandle) -> list[int]:
    """:func:`open_items` in the caller's session."""
    return repo.open_for(s, p.id, p.actor.id) if p.actor.id is not None else []


def reserved(db: Database, p: ProjectHandle) -> set[int]:
    """Unlabelled items still the team's (open, or waiting for review): kept out of everyone's
    general queue. An item its annotators released (a single annotator's skip) is not."""
    with db.session() as s:
        return reserved_in(s, p)


def reserved_in(s: Session, p: ProjectHandle) -> set[int]:
    """:func:`reserved` in the caller's session."""
    ids = repo.reserved_ids(s, p.id)
    items = repo.team_items(s, p.id, sorted(ids)) if ids else {}
    return {uid for uid, item in items.items() if team_state(item) in ("open", "disputed")}


def my_progress(db: Database, p: ProjectHandle) -> tuple[int, int] | None:
    """The acting user's (assigned, still open) items; None when they have none assigned."""
    if p.actor.id is None:
        return None
    with db.session() as s:
        assigned = repo.assigned_count(s, p.id, p.actor.id)
        return (assigned, len(repo.open_for(s, p.id, p.actor.id))) if assigned else None


def progress(db: Database, p: ProjectHandle) -> dict[str, tuple[int, int]]:
    """Annotator -> (assigned, answered)."""
    with db.session() as s:
        return repo.progress(s, p.id)


def submit(
    db: Database,
    p: ProjectHandle,
    utterance_id: int,
    action: str,
    intents: Sequence[str] = (),
    *,
    batch: str | None = None,
) -> str:
    """Store the acting annotator's answer for an item assigned to them and, when the rules say
    so (see the module), accept it, in one transaction. Returns what happened, in words.

    Raises:
        ItemLockedError: not assigned to them, or accepted already (answers are final then).
    """
    with writing(db, p, purpose="answer") as s:
        return submit_in(s, p, utterance_id, action, intents, batch=batch)


def submit_in(
    s: Session,
    p: ProjectHandle,
    utterance_id: int,
    action: str,
    intents: Sequence[str] = (),
    *,
    batch: str | None = None,
) -> str:
    """:func:`submit` within the caller's transaction (:func:`app.access.writing`)."""
    if action not in ACTIONS:
        raise ValueError(f"Unknown answer {action!r}; use one of {', '.join(ACTIONS)}.")
    names = sorted(set(data_svc.parse_label_input(list(intents))))
    if action == "label" and not names:
        raise ValueError("Pick an intent first.")
    if OUT_OF_SCOPE in names:
        action, names = "oos", []
    for_purpose(s, p, "answer")
    check_known(s, p.id, names)  # an answer names intents of the project, as any label does
    item = repo.team_items(s, p.id, [utterance_id]).get(utterance_id)
    why = item_refusal(p.actor.id, p.role, item, "answer")
    if why is not None or item is None or p.actor.id is None:
        raise ItemLockedError(f"{why} Nothing was stored.")
    repo.save_answer(s, p.id, utterance_id, p.actor.id, action, names)
    item = repo.team_items(s, p.id, [utterance_id])[utterance_id]
    state = team_state(item)
    values = {answer_value(a, i) for a, i in item.answers.values()}
    if state == "open":
        return f"#{utterance_id}: your answer is stored; it waits for a second opinion."
    if state == "disputed":
        return f"#{utterance_id}: the answers differ; it goes to review."
    if None in values:
        return f"#{utterance_id} skipped."
    labels = [OUT_OF_SCOPE] if action == "oos" else names
    row = data_svc.label_in(s, p, utterance_id, labels, batch=batch or str(uuid.uuid4()))
    agreed = " (everyone agreed)" if len(item.assignees) > 1 else ""
    return f"#{utterance_id} → {', '.join(row.labels)}{agreed}."


def withdraw(db: Database, p: ProjectHandle, utterance_id: int, batch: str | None) -> bool:
    """Take back the acting user's answer to an item assigned to them (the queue's undo) and
    the label it made, if any. False when they have no answer there (nothing done). An accepted
    item's answer can be taken back only with the label it made (its own batch, untouched
    since): answers are final once another's answer or a decision accepted the item.

    Raises:
        ItemLockedError: the item was accepted by something else than this answer.
    """
    if p.actor.id is None:
        return False
    with writing(db, p, purpose="answer") as s:
        item = repo.team_items(s, p.id, [utterance_id]).get(utterance_id)
        if item is None or p.actor.id not in item.answers:
            return False
        if team_state(item) == "accepted":
            try:
                history.undo_in(s, p, batch or "")
            except NotFoundError:
                raise ItemLockedError(
                    f"#{utterance_id} was accepted already: answers are final once an item is "
                    "accepted. Nothing was changed."
                ) from None
        repo.delete_answer(s, p.id, utterance_id, p.actor.id)
    return True


def disputes(
    db: Database, p: ProjectHandle, *, mine_left_out: bool = False, mine_only: bool = False
) -> list[Dispute]:
    """The review queue: overlap items every annotator answered, not all alike, and still
    unlabelled, in file order; with ``mine_left_out``, those the acting user may decide (not
    the ones they answered themselves); with ``mine_only``, the ones they answered (what an
    annotator sees of her own answers under review)."""
    with db.session() as s:
        overlap = repo.overlap_ids(s, p.id)
        rows = {r.id: r for r in list_utterances(s, p.id, ids=overlap) if r.split == "unlabelled"}
        items = repo.team_items(s, p.id, list(rows))
        given: dict[int, list[repo.AnswerRow]] = {}
        for a in repo.answers(s, p.id, list(rows)):
            given.setdefault(a.utterance_id, []).append(a)
    out = []
    for uid, row in rows.items():
        item = items.get(uid)
        if item is None or team_state(item) != "disputed":
            continue
        mine = p.actor.id in dict(item.assignees)
        if (mine_left_out and mine) or (mine_only and not mine):
            continue
        answers = tuple(Given(a.annotator, a.action, a.intents) for a in given.get(uid, []))
        out.append(Dispute(uid, row.text, answers))
    return out


def decide(
    db: Database,
    p: ProjectHandle,
    utterance_id: int,
    intents: Sequence[str],
    *,
    batch: str | None = None,
) -> str:
    """The reviewer's decision for a disputed item: its accepted label (audited under its own
    batch; undone like any label). ``intents`` = ``[out_of_scope]`` for out of scope. Refused for
    an item not waiting for review, and for a reviewer who answered it."""
    with writing(db, p, purpose="decide") as s:
        return decide_in(s, p, utterance_id, intents, batch=batch)


def decide_in(
    s: Session,
    p: ProjectHandle,
    utterance_id: int,
    intents: Sequence[str],
    *,
    batch: str | None = None,
) -> str:
    """:func:`decide` within the caller's transaction (:func:`app.access.writing`)."""
    names = data_svc.parse_label_input(list(intents))
    if not names:
        raise ValueError("Pick an answer or an intent first.")
    for_purpose(s, p, "decide")
    item = repo.team_items(s, p.id, [utterance_id]).get(utterance_id)
    why = item_refusal(p.actor.id, p.role, item, "decide")
    if why is not None:
        raise ItemLockedError(f"{why} Nothing was changed.")
    row = data_svc.label_in(s, p, utterance_id, names, batch=batch or str(uuid.uuid4()))
    return f"#{utterance_id} → {', '.join(row.labels)} (reviewed)."


def items(db: Database, p: ProjectHandle, ids: Sequence[int]) -> list[dict[str, Any]]:
    """The utterances ``ids`` as ``{id, text, labels, split}``, in the order given (unknown ids
    left out): what the REST API shows of an annotator's items."""
    with db.session() as s:
        rows = list_utterances(s, p.id, ids=list(ids))
    found = {r.id: r for r in rows}
    return [
        {"id": i, "text": found[i].text, "labels": list(found[i].labels), "split": found[i].split}
        for i in ids
        if i in found
    ]


def annotator_choices(db: Database, p: ProjectHandle) -> list[str]:
    """Active users who may label in the project (its designers, and admins): who can be
    assigned."""
    with db.session() as s:
        out = []
        for u in list_users(s):
            if u.status != "active":
                continue
            role = project_role(u.role, False, member_role(s, p.id, u.id))
            if role in ("designer", "admin"):
                out.append(u.name)
        return out
