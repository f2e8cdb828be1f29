"""Labelling as a team: which annotator labels which utterance (:class:`Assignment`) and what
each one answered (:class:`Answer`), apart from the utterance's accepted label. The rules (who
is asked, when an answer is accepted, agreement) live in :mod:`app.services.labelling.team` and
:mod:`core.labelling.agreement`; this module stores and reads.

Example:
    >>> # with s a Session and pid a project id:
    >>> # add_assignments(s, pid, {12: [ana_id, ben_id]}); save_answer(s, pid, 12, ana_id, "label", ["a"])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import and_, delete, func, select
from sqlalchemy.orm import Session

from storage.names import OUT_OF_SCOPE, project_index
from storage.tables import User, Utterance, utcnow
from storage.team_tables import Answer, Assignment

ANSWER_ACTIONS = ("label", "oos", "skip")


@dataclass(frozen=True)
class AnswerRow:
    """One annotator's answer: ``intents`` sorted (empty for ``oos`` and ``skip``)."""

    utterance_id: int
    annotator: str
    action: str
    intents: tuple[str, ...]
    answered_at: datetime


@dataclass(frozen=True)
class TeamItem:
    """An utterance given to annotators, as the item rule sees it: its split now, who was asked
    (user id and name, in the order they were asked) and what each answered (user id ->
    (action, intents))."""

    id: int
    split: str
    assignees: tuple[tuple[int, str], ...]
    answers: Mapping[int, tuple[str, tuple[str, ...]]]


_SLICE = 500  # ids per IN (...) list


def team_items(s: Session, project_id: int, utterance_ids: Sequence[int]) -> dict[int, TeamItem]:
    """The items among ``utterance_ids`` that were given to annotators (others left out): three
    statements per 500 ids, one when none of them was."""
    out: dict[int, TeamItem] = {}
    ids = list(dict.fromkeys(utterance_ids))
    for start in range(0, len(ids), _SLICE):
        part = ids[start : start + _SLICE]
        asked: dict[int, list[tuple[int, str]]] = {}
        for uid, user, name in s.execute(
            select(Assignment.utterance_id, Assignment.user_id, User.name)
            .join(User, User.id == Assignment.user_id)
            .where(Assignment.project_id == project_id, Assignment.utterance_id.in_(part))
            .order_by(Assignment.id)
        ):
            asked.setdefault(uid, []).append((user, name))
        if not asked:
            continue
        given: dict[int, dict[int, tuple[str, tuple[str, ...]]]] = {}
        for uid, user, action, intents in s.execute(
            select(Answer.utterance_id, Answer.user_id, Answer.action, Answer.intents).where(
                Answer.project_id == project_id, Answer.utterance_id.in_(list(asked))
            )
        ):
            given.setdefault(uid, {})[user] = (action, tuple(intents or ()))
        splits = dict(
            s.execute(select(Utterance.id, Utterance.split).where(Utterance.id.in_(list(asked))))
            .tuples()
            .all()
        )
        for uid, who in asked.items():
            if uid in splits:
                out[uid] = TeamItem(uid, splits[uid], tuple(who), given.get(uid, {}))
    return out


def unassigned_unlabelled(
    s: Session, project_id: int, *, search: str | None = None, limit: int | None = None
) -> list[int]:
    """Unlabelled utterances no one is asked to label yet (containing ``search``), in file
    order."""
    assigned = select(Assignment.utterance_id).where(Assignment.project_id == project_id)
    q = (
        select(Utterance.id)
        .where(
            Utterance.project_id == project_id,
            Utterance.split == "unlabelled",
            Utterance.id.not_in(assigned),
        )
        .order_by(Utterance.id)
    )
    if search:
        q = q.where(func.lower(Utterance.text).contains(search.lower(), autoescape=True))
    if limit is not None:
        q = q.limit(limit)
    return list(s.scalars(q))


def add_assignments(s: Session, project_id: int, plan: Mapping[int, Sequence[int]]) -> int:
    """Ask the users in ``plan[utterance_id]`` to label it (those already asked are left as
    they are). Returns how many assignments were new."""
    have = set(
        s.execute(
            select(Assignment.utterance_id, Assignment.user_id).where(
                Assignment.project_id == project_id,
                Assignment.utterance_id.in_(list(plan)),
            )
        ).tuples()
    )
    new = [
        Assignment(project_id=project_id, utterance_id=uid, user_id=user)
        for uid, users in plan.items()
        for user in dict.fromkeys(users)
        if (uid, user) not in have
    ]
    s.add_all(new)
    s.flush()
    return len(new)


def assignees(s: Session, project_id: int, utterance_ids: Sequence[int]) -> dict[int, list[int]]:
    """Utterance id -> the ids of the users asked to label it (utterances with none left out)."""
    out: dict[int, list[int]] = {}
    rows = s.execute(
        select(Assignment.utterance_id, Assignment.user_id)
        .where(
            Assignment.project_id == project_id,
            Assignment.utterance_id.in_(list(utterance_ids)),
        )
        .order_by(Assignment.id)
    )
    for uid, user in rows:
        out.setdefault(uid, []).append(user)
    return out


def reserved_ids(s: Session, project_id: int) -> set[int]:
    """Unlabelled utterances assigned to someone."""
    q = (
        select(Assignment.utterance_id)
        .join(Utterance, Utterance.id == Assignment.utterance_id)
        .where(Assignment.project_id == project_id, Utterance.split == "unlabelled")
    )
    return set(s.scalars(q))


def open_for(s: Session, project_id: int, user_id: int, limit: int | None = None) -> list[int]:
    """The user's assigned utterances they have not answered yet and no one has labelled, in
    file order (their queue)."""
    answered = select(Answer.utterance_id).where(
        Answer.project_id == project_id, Answer.user_id == user_id
    )
    q = (
        select(Utterance.id)
        .join(Assignment, Assignment.utterance_id == Utterance.id)
        .where(
            Assignment.project_id == project_id,
            Assignment.user_id == user_id,
            Utterance.split == "unlabelled",
            Utterance.id.not_in(answered),
        )
        .order_by(Utterance.id)
    )
    if limit is not None:
        q = q.limit(limit)
    return list(s.scalars(q))


def assigned_count(s: Session, project_id: int, user_id: int) -> int:
    """How many utterances the user was asked to label."""
    q = select(func.count(Assignment.id)).where(
        Assignment.project_id == project_id, Assignment.user_id == user_id
    )
    return int(s.scalar(q) or 0)


def progress(s: Session, project_id: int) -> dict[str, tuple[int, int]]:
    """Annotator name -> (utterances assigned, answered), for everyone with an assignment."""
    answered = and_(
        Answer.utterance_id == Assignment.utterance_id, Answer.user_id == Assignment.user_id
    )
    rows = s.execute(
        select(User.name, func.count(Assignment.id), func.count(Answer.id))
        .join(User, User.id == Assignment.user_id)
        .outerjoin(Answer, answered)
        .where(Assignment.project_id == project_id)
        .group_by(User.name)
        .order_by(User.name)
    )
    return {name: (int(n), int(done)) for name, n, done in rows}


def save_answer(
    s: Session,
    project_id: int,
    utterance_id: int,
    user_id: int,
    action: str,
    intents: Sequence[str] = (),
) -> None:
    """Store the user's answer for the utterance (replacing their earlier one). An intent written
    another way is stored as the project's name for it (``Greet``: ``greet``), so two answers
    that name one intent agree; naming ``out_of_scope`` (``OUT-OF-SCOPE`` too) is out of scope."""
    if action not in ANSWER_ACTIONS:
        raise ValueError(f"Unknown answer {action!r}; use one of {', '.join(ANSWER_ACTIONS)}.")
    names: list[str] = []
    if action == "label":
        index = project_index(s, project_id)
        names = sorted({index.find(n) or n for n in intents})
        if OUT_OF_SCOPE in names:
            action, names = "oos", []
    found = s.scalars(
        select(Answer).where(Answer.utterance_id == utterance_id, Answer.user_id == user_id)
    ).first()
    if found is None:
        s.add(
            Answer(
                project_id=project_id,
                utterance_id=utterance_id,
                user_id=user_id,
                action=action,
                intents=names,
            )
        )
    else:
        found.action, found.intents, found.updated_at = action, names, utcnow()
    s.flush()


def delete_answer(s: Session, project_id: int, utterance_id: int, user_id: int) -> bool:
    """Remove the user's answer for the utterance; False when there was none."""
    done = s.execute(
        delete(Answer).where(
            Answer.project_id == project_id,
            Answer.utterance_id == utterance_id,
            Answer.user_id == user_id,
        )
    )
    return bool(getattr(done, "rowcount", 0))


def user_names(s: Session, user_ids: Sequence[int]) -> list[str]:
    """The names of these users."""
    return list(s.scalars(select(User.name).where(User.id.in_(list(user_ids)))))


def answers(
    s: Session, project_id: int, utterance_ids: Sequence[int] | None = None
) -> list[AnswerRow]:
    """The project's answers (of ``utterance_ids`` only, if given), by utterance then time."""
    q = (
        select(Answer, User.name)
        .join(User, User.id == Answer.user_id)
        .where(Answer.project_id == project_id)
        .order_by(Answer.utterance_id, Answer.updated_at, Answer.id)
    )
    if utterance_ids is not None:
        q = q.where(Answer.utterance_id.in_(list(utterance_ids)))
    return [
        AnswerRow(a.utterance_id, name, a.action, tuple(a.intents or ()), a.updated_at)
        for a, name in s.execute(q).tuples()
    ]


def overlap_ids(s: Session, project_id: int) -> list[int]:
    """Utterances assigned to two or more annotators, in file order."""
    q = (
        select(Assignment.utterance_id)
        .where(Assignment.project_id == project_id)
        .group_by(Assignment.utterance_id)
        .having(func.count(Assignment.id) > 1)
        .order_by(Assignment.utterance_id)
    )
    return list(s.scalars(q))
