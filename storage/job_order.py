"""The order in which queued jobs are taken (issue 73 item 6: fair per user across projects). The
queue's message only wakes a worker (docs/internals.md, "The training queue"); the worker then
takes the fairest queued job (:func:`fairest_queued`), which is not always the one whose message
woke it:

1. a job someone asked for (``manual``) goes ahead of every automatic one, whoever's;
2. then users take turns: the user whose last job started longest ago (or never) goes first, so
   one user's jobs, however many projects they label, push another user's back by at most the
   one running; an automatic job counts for the user whose labels started it
   (:mod:`app.services.models.auto_retrain`), every job without a user for one user (the local
   operator);
3. then first asked, first taken.

The claim itself is unchanged (:func:`storage.jobs.claim_job`, exactly once).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from storage.tables import TrainingJob

NEVER = datetime.min  # a user none of whose jobs ever started: first among equals


def fairest_queued(s: Session) -> int | None:
    """The id of the queued job to take now (see the module); None when none is queued."""
    queued = s.execute(
        select(TrainingJob.id, TrainingJob.user_id, TrainingJob.trigger).where(
            TrainingJob.status == "queued"
        )
    ).all()
    if not queued:
        return None
    turns = dict(
        s.execute(
            select(TrainingJob.user_id, func.max(TrainingJob.started_at))
            .where(TrainingJob.started_at.is_not(None))
            .group_by(TrainingJob.user_id)
        )
        .tuples()
        .all()
    )
    fairest = min(
        queued,
        key=lambda job: (job.trigger != "manual", turns.get(job.user_id) or NEVER, job.id),
    )
    return int(fairest.id)
