"""The label audit log read as batches, and undo.

Every change to labels, splits or utterances is a :class:`~storage.tables.LabelEvent`; the events
one action wrote (a bulk label, a merge, an import) share a batch id. A batch is undone as a whole,
the most recent one or any earlier one that later edits did not touch: undoing a batch whose
utterances someone changed since would silently throw that later work away, so it is refused.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Table, bindparam, delete, func, insert, select, update
from sqlalchemy.orm import Session

from storage import guard
from storage.bulk_labels import expire_rows
from storage.by_id import labels_of, slices, utterances_by_id
from storage.capacity import check_intent_room, check_row_room
from storage.deleted import restore
from storage.errors import ConflictError, NotFoundError
from storage.label_rules import resolve_intents
from storage.names import NameIndex
from storage.projects import _labels_of, intents_by_name
from storage.tables import Intent, Label, LabelEvent, TrainingJob, Utterance, utcnow

# The actions an undo can revert ("undo" events record undos themselves).
UNDOABLE = ("label", "split", "add", "import", "delete", "merge", "delete_intent")


@dataclass(frozen=True)
class Batch:
    """One action in the audit log: what it was, how many utterances it changed, and whether it
    can still be undone (``blocked_by``: why not, when it cannot)."""

    id: str
    action: str
    size: int
    user_id: int | None
    created_at: datetime
    example: str
    undone: bool
    blocked_by: str = ""
    before: tuple[str, ...] = ()  # the example's intents before the action, and after it
    after: tuple[str, ...] = ()

    @property
    def undoable(self) -> bool:
        return not self.undone and not self.blocked_by and self.action in UNDOABLE


@dataclass(frozen=True)
class Event:
    """One :class:`~storage.tables.LabelEvent` as read (plain rows: 10,000 of them in a few
    hundredths of a second, where ORM objects took a second and their flush two more)."""

    id: int
    utterance_id: int | None
    utterance_text: str
    user_id: int | None
    action: str
    before: list[str]
    after: list[str]
    split_before: str | None
    split_after: str | None
    undone: bool
    created_at: datetime
    gone_id: int | None = None  # a delete's: the utterance's id (storage.tables.LabelEvent)
    kept: dict[str, Any] | None = None  # a delete's: the rest of the row


def _events(s: Session, project_id: int, batch: str) -> list[Event]:
    s.flush()
    cols = [getattr(LabelEvent, f.name) for f in fields(Event)]
    rows = s.execute(
        select(*cols)
        .where(LabelEvent.project_id == project_id, LabelEvent.batch == batch)
        .order_by(LabelEvent.id)
    )
    return [Event(*r) for r in rows]


def _later_edits(s: Session, project_id: int, events: list[Event]) -> int:
    """How many of the batch's utterances not yet taken back were changed by a later action
    still in effect."""
    ids = {e.utterance_id for e in events if e.utterance_id is not None and not e.undone}
    if not ids:
        return 0
    last = max(e.id for e in events)
    return sum(
        int(
            s.scalar(
                select(func.count(func.distinct(LabelEvent.utterance_id))).where(
                    LabelEvent.project_id == project_id,
                    LabelEvent.id > last,
                    LabelEvent.utterance_id.in_(list(part)),
                    LabelEvent.undone.is_(False),
                    LabelEvent.action != "undo",
                )
            )
            or 0
        )
        for part in slices(sorted(ids))
    )


def recent_batches(s: Session, project_id: int, limit: int = 50) -> list[Batch]:
    """The project's most recent actions, newest first (undo records included, never undoable)."""
    heads = s.execute(
        select(
            LabelEvent.batch,
            func.max(LabelEvent.id),
            func.count(LabelEvent.id),
        )
        .where(LabelEvent.project_id == project_id)
        .group_by(LabelEvent.batch)
        .order_by(func.max(LabelEvent.id).desc())
        .limit(limit)
    ).all()
    out = []
    for batch, last_id, size in heads:
        last = s.get(LabelEvent, last_id)
        assert last is not None
        if last.action in UNDOABLE:
            events = _events(s, project_id, batch)
            undone = all(e.undone for e in events)
            later = 0 if undone else _later_edits(s, project_id, events)
        else:
            undone, later = bool(last.undone), 0
        out.append(
            Batch(
                batch,
                last.action,
                int(size),
                last.user_id,
                last.created_at,
                last.utterance_text,
                undone,
                f"{later} of its utterances were changed since" if later else "",
                tuple(last.before or ()),
                tuple(last.after or ()),
            )
        )
    return out


def undo_batch(
    s: Session,
    project_id: int,
    batch: str,
    *,
    user_id: int | None = None,
    limit: int | None = None,
    undo: str | None = None,
) -> list[Event]:
    """Revert every change of one batch: labels and splits back, added or imported utterances
    removed, deleted ones restored. Refused (nothing changes) when the batch was undone already
    or a later action still in effect changed one of its utterances.

    ``limit``: take back at most this many of its events (the newest first) in this transaction,
    under the undo's batch id ``undo``; :func:`pending` says how many are left, and a next call
    with the same ``undo`` takes back more (:mod:`app.services.labelling.data` undoes a long batch in short
    transactions). A batch partly undone (stopped half-way) is finished by undoing it again.
    Returns the events taken back by this call."""
    events = _events(s, project_id, batch)
    if not events:
        raise NotFoundError("No such change in this project's history.")
    if events[0].action not in UNDOABLE:
        raise ConflictError(f"A {events[0].action!r} cannot be undone.")
    waiting = [e for e in events if not e.undone]
    if not waiting:
        raise ConflictError("That change was undone already.")
    touched = sorted({e.utterance_id for e in waiting if e.utterance_id is not None})
    guard.check(s, project_id, touched, undo_of={e.user_id for e in waiting})
    later = _later_edits(s, project_id, events)
    if later:
        raise ConflictError(
            f"{later} of the utterances this change touched were edited since; undo those later "
            "changes first. Nothing was changed."
        )
    _check_room(s, project_id, waiting)
    undo = undo or str(uuid.uuid4())
    part = waiting[-limit:] if limit else waiting
    added = [e for e in part if e.action in ("add", "import") and e.utterance_id is not None]
    for ids in slices([e.id for e in part]):
        s.execute(update(LabelEvent).where(LabelEvent.id.in_(list(ids))).values(undone=True))
    if added:
        _remove(s, project_id, [e.utterance_id for e in added if e.utterance_id], user_id, undo)
    _revert(s, project_id, [e for e in part if e.action not in ("add", "import")], user_id, undo)
    _drop_intents_made_by(s, project_id, events)
    return part


def _check_room(s: Session, project_id: int, waiting: list[Event]) -> None:
    """Refuse an undo that would take the project past a capacity limit (:mod:`storage.capacity`),
    before it changes anything: the deleted utterances it would bring back (the row cap), the
    intents it would make again (the intent cap). The whole batch is counted, not only this
    transaction's part of it, so a long undo is refused at its start, never half-way. Before,
    undoing a delete in a full project went past the row cap (issue 64)."""
    doing = "undoing this change"
    back = sum(1 for e in waiting if e.action == "delete")
    check_row_room(s, project_id, back, doing=doing, new="brought back")
    names = {n for e in waiting if e.action not in ("add", "import") for n in e.before}
    if names:
        index = NameIndex(intents_by_name(s, project_id))
        again = {n for n in names if index.find(n) is None}
        check_intent_room(s, project_id, len(again), doing=doing, new="made again")


def pending(s: Session, project_id: int, batch: str) -> int:
    """How many events of ``batch`` are not undone yet."""
    return int(
        s.scalar(
            select(func.count(LabelEvent.id)).where(
                LabelEvent.project_id == project_id,
                LabelEvent.batch == batch,
                LabelEvent.undone.is_(False),
            )
        )
        or 0
    )


def _revert(
    s: Session, project_id: int, events: list[Event], user_id: int | None, undo: str
) -> None:
    """Put back what ``events`` (label, split, merge, delete…) changed, newest first, each with
    its "undo" event: worked out in memory and written in a few statements (one row at a time,
    a 10,000-row batch held the write lock for 99 s)."""
    s.flush()
    ids = sorted({e.utterance_id for e in events if e.utterance_id is not None})
    found = utterances_by_id(s, project_id, ids, Utterance.text, Utterance.split)
    state: dict[int, tuple[list[str], str]] = {uid: ([], r.split) for uid, r in found.items()}
    texts = {uid: r.text for uid, r in found.items()}
    for uid, names in labels_of(s, list(state)).items():
        state[uid] = (names, state[uid][1])
    first = {uid: (list(names), split) for uid, (names, split) in state.items()}
    logged: list[dict[str, Any]] = []
    for ev in reversed(events):
        if ev.action == "delete":
            restore(s, project_id, ev, user_id, undo)
            continue
        if ev.utterance_id not in state:
            continue  # deleted since
        current, split_now = state[ev.utterance_id]
        split = ev.split_before if ev.split_before is not None else split_now
        state[ev.utterance_id] = (sorted(ev.before), split)
        logged.append(
            {
                "project_id": project_id,
                "utterance_id": ev.utterance_id,
                "utterance_text": texts[ev.utterance_id],
                "user_id": user_id,
                "batch": undo,
                "action": "undo",
                "before": current,
                "after": list(ev.before),
                "split_before": split_now,
                "split_after": split,
            }
        )
    _write_states(s, project_id, {u: v for u, v in state.items() if v != first[u]})
    if logged:
        s.execute(insert(cast(Table, LabelEvent.__table__)), logged)
    expire_rows(s)


def _write_states(s: Session, project_id: int, states: dict[int, tuple[list[str], str]]) -> None:
    """Give each utterance its labels (intent names, made again where deleted) and split."""
    if not states:
        return
    intents = {
        names: resolve_intents(s, project_id, names, create_missing=True)
        for names in {tuple(names) for names, _ in states.values()}
    }
    changed = list(states)
    for part in slices(changed):
        s.execute(delete(Label).where(Label.utterance_id.in_(list(part))))
    labels = [
        {"utterance_id": uid, "intent_id": i.id}
        for uid, (names, _) in states.items()
        for i in intents[tuple(names)]
    ]
    if labels:
        s.execute(insert(cast(Table, Label.__table__)), labels)
    t = cast(Table, Utterance.__table__)
    now = utcnow()
    s.execute(
        update(t)
        .where(t.c.id == bindparam("uid"))
        .values(split=bindparam("new_split"), updated_at=now, version=t.c.version + 1),
        [{"uid": uid, "new_split": split} for uid, (_, split) in states.items()],
    )


# An intent made by a batch is created in the batch's own transaction, just before its events.
_SAME_ACTION = timedelta(seconds=1)


def _drop_intents_made_by(s: Session, project_id: int, events: list[Event]) -> None:
    """Delete the intents the undone batch created (a new intent from a cluster, a label or a
    merge into a new name) when nothing carries them any more, so the undo leaves the intent
    list as it was. An intent made earlier by hand, or one labelled since, stays."""
    named = {n for e in events for n in e.after} - {n for e in events for n in e.before}
    if not named:
        return
    first, last = min(e.created_at for e in events), max(e.created_at for e in events)
    for intent in s.scalars(
        select(Intent).where(Intent.project_id == project_id, Intent.name.in_(named))
    ):
        made_then = first - _SAME_ACTION <= intent.created_at <= last
        if (
            made_then
            and s.scalar(select(Label.utterance_id).where(Label.intent_id == intent.id)) is None
        ):
            s.delete(intent)
    s.flush()


def _remove(s: Session, project_id: int, ids: list[int], user_id: int | None, batch: str) -> None:
    """Delete many utterances at once (undoing an import of thousands), each with its "delete"
    event: a few statements, not a round of queries per row."""
    s.flush()
    for start in range(0, len(ids), 900):  # stay under SQLite's bound-variable limit
        part = ids[start : start + 900]
        rows = list(utterances_by_id(s, project_id, part, Utterance.text, Utterance.split).values())
        labels = _labels_of(s, [r.id for r in rows])
        s.add_all(
            LabelEvent(
                project_id=project_id,
                utterance_id=r.id,
                utterance_text=r.text,
                user_id=user_id,
                batch=batch,
                action="delete",
                before=sorted(labels.get(r.id, [])),
                after=[],
                split_before=r.split,
            )
            for r in rows
        )
        s.flush()
        s.execute(delete(Utterance).where(Utterance.id.in_([r.id for r in rows])))
    expire_rows(s)


def last_batch(s: Session, project_id: int) -> str | None:
    """The batch of the most recent change still in effect (None: nothing to undo)."""
    return s.scalar(
        select(LabelEvent.batch)
        .where(
            LabelEvent.project_id == project_id,
            LabelEvent.undone.is_(False),
            LabelEvent.action.in_(UNDOABLE),
        )
        .order_by(LabelEvent.id.desc())
        .limit(1)
    )


def undo_last(s: Session, project_id: int, *, user_id: int | None = None) -> list[Event]:
    """Undo the most recent change still in effect (a whole batch). Returns the undone events;
    empty when there is nothing to undo."""
    batch = last_batch(s, project_id)
    return [] if batch is None else undo_batch(s, project_id, batch, user_id=user_id)


def recent_events(s: Session, project_id: int, limit: int = 100) -> list[LabelEvent]:
    return list(
        s.scalars(
            select(LabelEvent)
            .where(LabelEvent.project_id == project_id)
            .order_by(LabelEvent.id.desc())
            .limit(limit)
        )
    )


def imported_only(s: Session, project_id: int, job_id: int) -> bool:
    """Whether job ``job_id`` is the project's first and, when it was asked for, every label of
    the project had come from an import: nobody had labelled (its retrain is the imported labels')."""
    created = s.scalar(select(TrainingJob.created_at).where(TrainingJob.id == job_id))
    first = select(TrainingJob.id).where(
        TrainingJob.project_id == project_id, TrainingJob.id < job_id
    )
    given = select(LabelEvent.id).where(
        LabelEvent.project_id == project_id,
        LabelEvent.action != "import",
        LabelEvent.created_at <= (created or utcnow()),
    )
    return s.scalar(first.limit(1)) is None and s.scalar(given.limit(1)) is None
