"""The order in which queued jobs are taken (issue 73 item 6: fair per user across projects). The
queue's message only wakes a worker (docs/internals.md, "The training queue"); the worker then
takes the fairest queued job (:func:`fairest_queued`), which is not always the one whose message
woke it:

1. a job someone asked for (``manual``) goes ahead of every automatic one, whoever's;
2. then users take turns: the user whose last job started longest ago (or never) goes first, so
   one user's jobs, however many projects they label, push another user's back by at most the
   one running; a job counts for whoever asked for it, an automatic one (nobody asked:
   :mod:`app.services.training.auto_retrain`) for whoever labelled its project last before it was
   queued (up to its ``label_mark``), every job without a user for one user (the local operator);
3. then first asked, first taken.

The claim itself is unchanged (:func:`storage.jobs.claim_job`, exactly once).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ColumnElement, case, func, select
from sqlalchemy.orm import Session

from storage.tables import LabelEvent, TrainingJob

NEVER = datetime.min  # a user none of whose jobs ever started: first among equals
# The turns are read from this many latest starts (a user none of whose jobs is among them: never)
RECENT = 200


def fairest_queued(s: Session) -> int | None:
    """The id of the queued job to take now (see the module); None when none is queued."""
    user = counted_for()
    queued = s.execute(
        select(TrainingJob.id, TrainingJob.trigger, user).where(TrainingJob.status == "queued")
    ).all()
    if not queued:
        return None
    turns: dict[int | None, datetime] = {}
    for who, started in s.execute(
        select(user, TrainingJob.started_at)
        .where(TrainingJob.started_at.is_not(None))
        .order_by(TrainingJob.started_at.desc())
        .limit(RECENT)
    ).tuples():
        turns.setdefault(who, started or NEVER)
    fairest = min(
        queued, key=lambda job: (job.trigger != "manual", turns.get(job[2], NEVER), job.id)
    )
    return int(fairest.id)


def counted_for() -> ColumnElement[int | None]:
    """The user a job counts for in the turns (see the module), as a column of its row."""
    labelled_last = (
        select(LabelEvent.user_id)
        .where(
            LabelEvent.project_id == TrainingJob.project_id,
            LabelEvent.id <= func.coalesce(TrainingJob.label_mark, 0),
        )
        .order_by(LabelEvent.id.desc())
        .limit(1)
        .correlate(TrainingJob)
        .scalar_subquery()
    )
    automatic = (TrainingJob.user_id.is_(None)) & (TrainingJob.trigger != "manual")
    return case((automatic, labelled_last), else_=TrainingJob.user_id)
