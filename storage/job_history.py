"""A project's retrains as history: what its labels did since its last retrain read them (the
trigger of an automatic retrain, :mod:`app.services.training.auto_retrain`: a job records the
project's newest label event when it is created and again when it reads its data,
``TrainingJob.label_mark``; the label events after the newest mark are the labels its next
retrain has not seen), and its recent jobs (the Activity tab's retrains).

What the labels did is counted net (issue 71 item 2): an utterance's place in the pool (the
labelled `train` rows a retrain learns from: its intents, or none) before its first event after
the mark against after its last one, so edits that cancel out (a bulk label and its undo) change
nothing. The events alone say both (their intent names as written then: an intent renamed since
is not a change); where none of them moved the utterance's split, its split now is its split
then."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from storage.job_view import ACTIVE_STATUSES, JobView, view_of
from storage.slices import slices
from storage.tables import Intent, Label, LabelEvent, TrainingJob, Utterance

POOL = "train"  # the split a retrain learns from


@dataclass(frozen=True)
class PoolChange:
    """One utterance whose place in the pool differs from when the last retrain read the
    project: its intents then and now (None: not in the pool; deleted, unlabelled or `test`), and
    what the model that served decided when its last label was given (None: not known)."""

    then: frozenset[str] | None
    now: frozenset[str] | None
    served: frozenset[str] | None = None


@dataclass(frozen=True)
class PoolChanges:
    """What the project's labels did since its last retrain read them (an automatic retrain's
    trigger): ``changes``, net, one per utterance (:class:`PoolChange`); the pool now
    (``pool`` examples, ``per_intent``); ``last_at``, when the newest label event after the
    mark was written (any, one undone included: someone was working), on the database's clock;
    ``newest``, the newest label event's id; and ``active``, whether a job is queued or
    running."""

    changes: tuple[PoolChange, ...] = ()
    pool: int = 0
    per_intent: Mapping[str, int] = field(default_factory=dict)
    last_at: datetime | None = None
    newest: int = 0
    active: bool = False


def label_marks(s: Session, project_id: int) -> tuple[int, int]:
    """(the newest mark a job of the project recorded, its newest label event's id): two cheap
    reads; :func:`changes_since_last_job` says the same as long as they are the same."""
    mark = s.scalar(
        select(func.max(TrainingJob.label_mark)).where(TrainingJob.project_id == project_id)
    )
    newest = s.scalar(select(func.max(LabelEvent.id)).where(LabelEvent.project_id == project_id))
    return int(mark or 0), int(newest or 0)


def has_active_job(s: Session, project_id: int) -> bool:
    """Whether the project has a job queued or running."""
    found = s.scalar(
        select(TrainingJob.id)
        .where(TrainingJob.project_id == project_id, TrainingJob.status.in_(ACTIVE_STATUSES))
        .limit(1)
    )
    return found is not None


def changes_since_last_job(s: Session, project_id: int) -> PoolChanges:
    """:class:`PoolChanges` for the project: the label events after the newest mark a job of it
    recorded (``label_mark``; none: every event counts), net per utterance."""
    mark, _ = label_marks(s, project_id)
    rows = s.execute(
        select(
            LabelEvent.id,
            LabelEvent.utterance_id,
            LabelEvent.gone_id,
            LabelEvent.before,
            LabelEvent.after,
            LabelEvent.split_before,
            LabelEvent.split_after,
            LabelEvent.served,
            LabelEvent.created_at,
        )
        .where(LabelEvent.project_id == project_id, LabelEvent.id > mark)
        .order_by(LabelEvent.id)
    ).all()
    first: dict[int, Any] = {}
    last: dict[int, Any] = {}
    split_then: dict[int, str] = {}
    split_now: dict[int, str] = {}
    for row in rows:
        key = row.utterance_id or row.gone_id or -row.id
        first.setdefault(key, row)
        last[key] = row
        if row.split_before is not None:
            split_then.setdefault(key, row.split_before)
        if row.split_after is not None:
            split_now[key] = row.split_after
    unmoved = [k for k in first if k > 0 and k not in split_then and k not in split_now]
    split_then.update(_splits(s, project_id, unmoved))  # never moved since: as it is now
    changes = []
    for key, row in first.items():
        then_split = split_then.get(key, split_now.get(key))
        then = _place(row.before, then_split)
        now = _place(last[key].after, split_now.get(key, then_split))
        if then == now:
            continue  # written, and written back (or never in the pool)
        served = last[key].served
        changes.append(PoolChange(then, now, None if served is None else frozenset(served)))
    pool, per_intent = _pool(s, project_id)
    return PoolChanges(
        tuple(changes),
        pool,
        per_intent,
        rows[-1].created_at if rows else None,
        rows[-1].id if rows else mark,
        has_active_job(s, project_id),
    )


def _place(labels: list[Any] | None, split: str | None) -> frozenset[str] | None:
    """An utterance's place in the pool: its intents when it is a labelled `train` row."""
    return frozenset(labels) if labels and split == POOL else None


def _splits(s: Session, project_id: int, ids: list[int]) -> dict[int, str]:
    out: dict[int, str] = {}
    for part in slices(ids):
        out.update(
            s.execute(
                select(Utterance.id, Utterance.split).where(
                    Utterance.project_id == project_id, Utterance.id.in_(list(part))
                )
            )
            .tuples()
            .all()
        )
    return out


def _pool(s: Session, project_id: int) -> tuple[int, dict[str, int]]:
    """The pool now: its examples (labelled `train` rows) and the examples of each intent."""
    in_pool = (Utterance.id == Label.utterance_id) & (Utterance.project_id == project_id)
    in_pool &= Utterance.split == POOL
    size = s.scalar(select(func.count(func.distinct(Label.utterance_id))).join(Utterance, in_pool))
    per_intent = (
        s.execute(
            select(Intent.name, func.count())
            .select_from(Label)
            .join(Utterance, in_pool)
            .join(Intent, Intent.id == Label.intent_id)
            .group_by(Intent.name)
        )
        .tuples()
        .all()
    )
    return int(size or 0), dict(per_intent)


def recent_jobs(s: Session, project_id: int, limit: int = 20) -> list[JobView]:
    """The project's newest jobs, newest first."""
    rows = s.scalars(
        select(TrainingJob)
        .where(TrainingJob.project_id == project_id)
        .order_by(TrainingJob.id.desc())
        .limit(limit)
    )
    return [view_of(job) for job in rows]
