"""The jobs nothing will finish, failed so that they stop blocking their project's next retrain:
a running job whose worker died (its heartbeat older than the timeout, a minute by default, the
one sign that holds across machines; or, when every worker runs on this host (the local queue),
at once when its pid is gone), and a queued job whose queue message is gone.

Whether a worker is alive is judged on one clock, the database's (:func:`storage.jobs.clock`): a
heartbeat is stamped with it and the reaper compares with it, so a worker on a machine whose clock
is off is neither reaped while it beats nor kept alive once it stops. Every failure is one
``UPDATE … WHERE`` that asks again, on the row as it is then, whether the job is still in the state
that condemned it: what its worker writes meanwhile (a heartbeat, its end, its version, a claim)
always wins.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from datetime import timedelta

from sqlalchemy import select, true, update
from sqlalchemy.orm import Session

from storage.jobs import clock
from storage.tables import TrainingJob

DEAD_AFTER_SECONDS = 60.0


def pid_alive(pid: int | None) -> bool:
    """Whether process ``pid`` runs on this host (a zombie counts as dead)."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][:1] != "Z"
    except OSError:
        return True


def dead_jobs(
    s: Session,
    *,
    alive: Callable[[int | None], bool] | None = None,
    dead_after: float = DEAD_AFTER_SECONDS,
) -> list[tuple[int, bool, int | None]]:
    """The running jobs whose worker is gone, as :func:`reap_dead_jobs` judges them, without
    changing anything: (job id, gone by its pid, its version)."""
    cutoff = clock(s) - timedelta(seconds=dead_after)
    found = []
    for job_id, pid, last, version in s.execute(
        select(
            TrainingJob.id,
            TrainingJob.worker_pid,
            TrainingJob.heartbeat_at,
            TrainingJob.model_version_id,
        ).where(TrainingJob.status == "running")
    ).all():
        gone = alive is not None and not alive(pid)
        if gone or last is None or last < cutoff:
            found.append((job_id, gone, version))
    return found


def reap_dead_jobs(
    s: Session,
    *,
    alive: Callable[[int | None], bool] | None = None,
    dead_after: float = DEAD_AFTER_SECONDS,
) -> int:
    """Mark running jobs whose worker is gone as failed; the active model is unchanged. Gone: no
    heartbeat for ``dead_after`` seconds (on the database's :func:`clock`), or ``alive(pid)`` is
    false (pass :func:`pid_alive` only when every worker runs on this host: a pid means nothing
    on another machine). Each is failed by one ``UPDATE … WHERE`` that asks again, on the row as
    it is then, whether the job is still running and still silent: a heartbeat, an end or a
    version its worker writes meanwhile always wins. Returns how many. It reads, then writes:
    on SQLite ``s`` should hold the write lock from its start (``Database.write``)."""
    now = clock(s)
    silent = TrainingJob.heartbeat_at.is_(None) | (
        TrainingJob.heartbeat_at < now - timedelta(seconds=dead_after)
    )
    running = TrainingJob.status == "running"
    n = 0
    for job_id, gone, version in dead_jobs(s, alive=alive, dead_after=dead_after):
        n += s.execute(
            update(TrainingJob)
            .where(TrainingJob.id == job_id, running, true() if gone else silent)
            .values(status="failed", message=dead_message(version), finished_at=now)
        ).rowcount  # type: ignore[attr-defined]
    return n


def dead_message(version: int | None) -> str:
    """Why a job whose worker died ended: before its version was registered nothing changed;
    after (its int8 phase, issue 55) the version is registered and keeps its fp32 encoder."""
    if version is None:
        return "the training worker stopped unexpectedly; the active model is unchanged"
    return (
        f"the training worker stopped unexpectedly after registering v{version}: it keeps its "
        "fp32 encoder (its int8 copy was not finished; the next retrain builds one)"
    )


def has_queued_jobs(s: Session, *, older_than: float) -> bool:
    """Whether any job has waited in the queue for more than ``older_than`` seconds."""
    cutoff = clock(s) - timedelta(seconds=older_than)
    return (
        s.scalar(
            select(TrainingJob.id)
            .where(TrainingJob.status == "queued", TrainingJob.created_at < cutoff)
            .limit(1)
        )
        is not None
    )


def reap_lost_jobs(s: Session, pending: Collection[int], *, older_than: float) -> int:
    """Fail the queued jobs whose message the queue no longer holds (``pending``: the job ids it
    does hold), e.g. Redis restarted without persistence: no worker will ever start them, and they
    would block the project's next retrain. Returns how many.

    A worker takes a job's message off the queue first and claims its row a moment later (up to
    the database's busy timeout): a job missing from the queue may be one a worker is taking.
    So a job is failed only when it was queued more than ``older_than`` seconds ago and its
    message was missing at two looks at least ``older_than`` seconds apart: the first look marks
    when it was first missed (in ``heartbeat_at``, unused while a job is queued), a look that
    finds the message again clears the mark, and the failure is one ``UPDATE … WHERE status =
    'queued'``, so a claim in between always wins."""
    now = clock(s)
    cutoff = now - timedelta(seconds=older_than)
    n = 0
    for job_id, missed_at in s.execute(
        select(TrainingJob.id, TrainingJob.heartbeat_at).where(
            TrainingJob.status == "queued", TrainingJob.created_at < cutoff
        )
    ).all():
        still_queued = (TrainingJob.id == job_id) & (TrainingJob.status == "queued")
        if job_id in pending:
            if missed_at is not None:
                s.execute(update(TrainingJob).where(still_queued).values(heartbeat_at=None))
            continue
        if missed_at is None or missed_at > cutoff:
            if missed_at is None:  # first missed now: a worker may be claiming it
                s.execute(update(TrainingJob).where(still_queued).values(heartbeat_at=now))
            continue
        n += s.execute(
            update(TrainingJob)
            .where(still_queued)
            .values(
                status="failed",
                message=(
                    "the training queue lost this job (restarted without its data?); nothing "
                    "was trained: retrain again"
                ),
                finished_at=now,
            )
        ).rowcount  # type: ignore[attr-defined]
    return n
