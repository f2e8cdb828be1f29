"""The label audit log read as batches, and undo.

Every change to labels, splits or utterances is a :class:`~storage.tables.LabelEvent`; the events
one action wrote (a bulk label, a merge, an import) share a batch id. A batch is undone as a whole,
the most recent one or any earlier one that later edits did not touch: undoing a batch whose
utterances someone changed since would silently throw that later work away, so it is refused.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from storage import guard
from storage.errors import ConflictError, NotFoundError
from storage.projects import _labels_of
from storage.tables import Intent, Label, LabelEvent, Utterance
from storage.utterances import _log, _resolve_intents, replace_labels

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

    @property
    def undoable(self) -> bool:
        return not self.undone and not self.blocked_by and self.action in UNDOABLE


def _events(s: Session, project_id: int, batch: str) -> list[LabelEvent]:
    return list(
        s.scalars(
            select(LabelEvent)
            .where(LabelEvent.project_id == project_id, LabelEvent.batch == batch)
            .order_by(LabelEvent.id)
        )
    )


def _later_edits(s: Session, project_id: int, events: list[LabelEvent]) -> int:
    """How many of the batch's utterances were changed by a later action still in effect."""
    ids = {e.utterance_id for e in events if e.utterance_id is not None}
    if not ids:
        return 0
    last = max(e.id for e in events)
    return int(
        s.scalar(
            select(func.count(func.distinct(LabelEvent.utterance_id))).where(
                LabelEvent.project_id == project_id,
                LabelEvent.id > last,
                LabelEvent.utterance_id.in_(ids),
                LabelEvent.undone.is_(False),
                LabelEvent.action != "undo",
            )
        )
        or 0
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
        events = _events(s, project_id, batch) if last.action in UNDOABLE else [last]
        undone = all(e.undone for e in events)
        later = 0 if undone or last.action not in UNDOABLE else _later_edits(s, project_id, events)
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
            )
        )
    return out


def undo_batch(
    s: Session, project_id: int, batch: str, *, user_id: int | None = None
) -> list[LabelEvent]:
    """Revert every change of one batch: labels and splits back, added or imported utterances
    removed, deleted ones restored. Refused (nothing changes) when the batch was undone already
    or a later action still in effect changed one of its utterances."""
    events = _events(s, project_id, batch)
    if not events:
        raise NotFoundError("No such change in this project's history.")
    if events[0].action not in UNDOABLE:
        raise ConflictError(f"A {events[0].action!r} cannot be undone.")
    if all(e.undone for e in events):
        raise ConflictError("That change was undone already.")
    touched = sorted({e.utterance_id for e in events if e.utterance_id is not None})
    guard.check(s, project_id, touched, undo_of={e.user_id for e in events})
    later = _later_edits(s, project_id, events)
    if later:
        raise ConflictError(
            f"{later} of the utterances this change touched were edited since; undo those later "
            "changes first. Nothing was changed."
        )
    undo = str(uuid.uuid4())
    added = [e for e in events if e.action in ("add", "import") and e.utterance_id is not None]
    for ev in added:
        ev.undone = True
    if added:
        _remove(s, project_id, [e.utterance_id for e in added if e.utterance_id], user_id, undo)
    for ev in reversed(events):
        if ev.action in ("add", "import"):
            ev.undone = True
            continue
        ev.undone = True
        if ev.action == "delete":
            _restore(s, project_id, ev, user_id, undo)
            continue
        u = s.get(Utterance, ev.utterance_id) if ev.utterance_id is not None else None
        if u is None:
            continue
        current = _labels_of(s, [u.id])[u.id]
        split_now = u.split
        if ev.split_before is not None:
            u.split = ev.split_before
        replace_labels(s, u, _resolve_intents(s, project_id, ev.before, create_missing=True))
        _log(s, u, current, list(ev.before), "undo", user_id, undo, split_now, u.split)
    s.flush()
    _drop_intents_made_by(s, project_id, events)
    return events


# An intent made by a batch is created in the batch's own transaction, just before its events.
_SAME_ACTION = timedelta(seconds=1)


def _drop_intents_made_by(s: Session, project_id: int, events: list[LabelEvent]) -> None:
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
        rows = s.execute(
            select(Utterance.id, Utterance.text, Utterance.split).where(
                Utterance.project_id == project_id, Utterance.id.in_(part)
            )
        ).all()
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
    s.expire_all()


def _restore(s: Session, project_id: int, ev: LabelEvent, user_id: int | None, batch: str) -> None:
    """Bring back a deleted utterance as it was: under its own id (links, notes and exports that
    cite it resolve again), with its intents, split, context, entity spans and creation time,
    and its earlier events linked to it again. Only where SQLite gave that id to an utterance
    added since (it reuses the highest id once freed) does it come back under a new one."""
    if s.scalar(
        select(Utterance.id).where(
            Utterance.project_id == project_id, Utterance.text == ev.utterance_text
        )
    ):
        raise ConflictError(
            f"The utterance {ev.utterance_text!r} was added again since it was deleted. "
            "Nothing was changed."
        )
    kept = ev.kept or {}
    u = Utterance(
        project_id=project_id,
        text=ev.utterance_text,
        split=ev.split_before or "train",
        context=kept.get("context") or "",
        entities=list(kept.get("entities") or []),
    )
    if kept.get("created_at"):
        u.created_at = datetime.fromisoformat(kept["created_at"])
    own = ev.gone_id
    if own is not None and s.get(Utterance, own) is None:
        u.id = own
    s.add(u)
    s.flush()
    names = []
    for intent in _resolve_intents(s, project_id, ev.before, create_missing=True):
        s.add(Label(utterance_id=u.id, intent_id=intent.id))
        names.append(intent.name)
    if own is not None:  # its history, up to the delete, is this utterance's again
        # (not that of an earlier utterance, still deleted, that had the same id: SQLite reuses
        # the highest id once freed; its delete ends its history)
        earlier = s.scalar(
            select(func.max(LabelEvent.id)).where(
                LabelEvent.project_id == project_id,
                LabelEvent.gone_id == own,
                LabelEvent.action == "delete",
                LabelEvent.undone.is_(False),
                LabelEvent.id < ev.id,
            )
        )
        s.execute(
            update(LabelEvent)
            .where(
                LabelEvent.project_id == project_id,
                LabelEvent.gone_id == own,
                LabelEvent.utterance_id.is_(None),
                LabelEvent.id <= ev.id,
                LabelEvent.id > (earlier or 0),
            )
            .values(utterance_id=u.id, gone_id=None)
            .execution_options(synchronize_session=False)
        )
    ev.utterance_id, ev.gone_id = u.id, None
    _log(s, u, [], names, "undo", user_id, batch, None, u.split)
    s.flush()


def undo_last(s: Session, project_id: int, *, user_id: int | None = None) -> list[LabelEvent]:
    """Undo the most recent change still in effect (a whole batch). Returns the undone events;
    empty when there is nothing to undo."""
    last = s.scalar(
        select(LabelEvent)
        .where(
            LabelEvent.project_id == project_id,
            LabelEvent.undone.is_(False),
            LabelEvent.action.in_(UNDOABLE),
        )
        .order_by(LabelEvent.id.desc())
        .limit(1)
    )
    return [] if last is None else undo_batch(s, project_id, last.batch, user_id=user_id)


def recent_events(s: Session, project_id: int, limit: int = 100) -> list[LabelEvent]:
    return list(
        s.scalars(
            select(LabelEvent)
            .where(LabelEvent.project_id == project_id)
            .order_by(LabelEvent.id.desc())
            .limit(limit)
        )
    )
