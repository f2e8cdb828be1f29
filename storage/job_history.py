"""A project's retrains as history: what its labels did since its last retrain read them (the
trigger of an automatic retrain, :mod:`app.services.models.auto_retrain`: a job records the
project's newest label event when it is created and again when it reads its data,
``TrainingJob.label_mark``; the label events after the newest mark are the labels its next
retrain has not seen), and its recent jobs (the Activity tab's retrains)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from storage.jobs import ACTIVE_STATUSES, JobView, view_of
from storage.tables import LabelEvent, TrainingJob


@dataclass(frozen=True)
class LabelsSince:
    """What the project's labels did since its last retrain read them (an automatic retrain's
    trigger): ``changed``, the utterances whose labels
    or split changed since then (counted up to the cap asked for), ``last_at``, when the newest
    of those changes was made (the database's clock), ``newest``, the newest label event's id,
    and ``active``, whether a job is queued or running."""

    changed: int
    last_at: datetime | None
    newest: int
    active: bool


def labels_since_last_job(s: Session, project_id: int, cap: int) -> LabelsSince:
    """:class:`LabelsSince` for the project: label events after the newest mark a job of it
    recorded (``label_mark``; none: every event counts), read at most until ``cap`` changed
    utterances are found."""
    mark = s.scalar(
        select(func.max(TrainingJob.label_mark)).where(TrainingJob.project_id == project_id)
    )
    active = (
        s.scalar(
            select(TrainingJob.id)
            .where(TrainingJob.project_id == project_id, TrainingJob.status.in_(ACTIVE_STATUSES))
            .limit(1)
        )
        is not None
    )
    rows = s.execute(
        select(
            LabelEvent.id,
            LabelEvent.utterance_id,
            LabelEvent.gone_id,
            LabelEvent.before,
            LabelEvent.after,
            LabelEvent.split_before,
            LabelEvent.split_after,
            LabelEvent.created_at,
        )
        .where(LabelEvent.project_id == project_id, LabelEvent.id > (mark or 0))
        .order_by(LabelEvent.id.desc())
        .limit(max(1, cap) * 50)  # enough to find ``cap`` changed utterances in a bulk label
    )
    changed: set[int] = set()
    last_at: datetime | None = None
    newest = 0
    for row in rows:
        newest = max(newest, row.id)
        moved = sorted(row.before or []) != sorted(row.after or [])
        if not moved and row.split_before == row.split_after:
            continue  # written, but the labels and split are as they were
        if last_at is None:
            last_at = row.created_at
        changed.add(row.utterance_id or row.gone_id or -row.id)
        if len(changed) >= cap:
            break
    return LabelsSince(len(changed), last_at, newest or int(mark or 0), active)


def recent_jobs(s: Session, project_id: int, limit: int = 20) -> list[JobView]:
    """The project's newest jobs, newest first."""
    rows = s.scalars(
        select(TrainingJob)
        .where(TrainingJob.project_id == project_id)
        .order_by(TrainingJob.id.desc())
        .limit(limit)
    )
    return [view_of(job) for job in rows]
