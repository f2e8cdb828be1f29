"""Training jobs: the row is the source of truth for status, progress, log and cancellation.

One active (queued or running) job per project; a worker claims a queued job atomically (one
``UPDATE … WHERE status = 'queued'``: on PostgreSQL a second claimer waits for the first's row lock,
then finds no queued row). A dead worker's job is reaped (:mod:`storage.job_reaper`). Every
function takes a session and returns plain :class:`~storage.job_view.JobView` records.

A function that changes a job's row after reading it locks the row first (``SELECT … FOR
UPDATE``; SQLite's writer lock does the same), so its writers (the worker's progress and
heartbeat, a cancel, the reaper) take turns on that row alone and no project's writers wait for
them (:data:`storage.db.ROWS`). A heartbeat is stamped with the database's :func:`clock`, which
the reaper compares with.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from sqlalchemy import select, text, update
from sqlalchemy.orm import Session

from storage import job_phases
from storage.errors import JobEnded, NotFoundError
from storage.job_phases import CALIBRATING, PHASES, TRAINING
from storage.job_view import ACTIVE_STATUSES, JobView, view_of
from storage.pool_state import last_label_event
from storage.tables import TrainingJob, utcnow

LOG_CHARS = 20_000


def _advance(job: TrainingJob, share: float | None) -> None:
    """Raise the job's share done to ``share`` (never lower it: the bar never goes back)."""
    if share is not None:
        job.progress = min(1.0, max(float(job.progress or 0.0), float(share)))


def _get(s: Session, job_id: int, *, lock: bool = False) -> TrainingJob:
    job = s.get(TrainingJob, job_id, with_for_update=lock or None)
    if job is None:
        raise NotFoundError(f"No job #{job_id}.")
    return job


def _locked(s: Session, job_id: int) -> TrainingJob | None:  # None: no such job
    return s.get(TrainingJob, job_id, with_for_update=True)  # locked until the transaction ends


def clock(s: Session) -> datetime:
    """Now, in UTC, on the database's clock (PostgreSQL's, shared by every machine; SQLite's
    machine is this one): what heartbeats are stamped with and the reaper compares with."""
    if s.get_bind().dialect.name == "postgresql":
        now = s.scalar(text("SELECT CAST(statement_timestamp() AT TIME ZONE 'UTC' AS timestamp)"))
        assert isinstance(now, datetime)
        return now
    return utcnow()


def _stamp(line: str) -> str:
    return f"[{time.strftime('%H:%M:%S')}] {line}\n"


def active_job(s: Session, project_id: int) -> JobView | None:
    """The project's queued or running job, if any."""
    job = s.scalar(
        select(TrainingJob).where(
            TrainingJob.project_id == project_id, TrainingJob.status.in_(ACTIVE_STATUSES)
        )
    )
    return view_of(job) if job is not None else None


TRIGGERS = ("manual", "auto")


def create_job(
    s: Session,
    project_id: int,
    config: dict[str, Any],
    *,
    user_id: int | None = None,
    trigger: str = "manual",
) -> tuple[JobView, bool]:
    """Queue a job, or return the project's active one: (job, created). Checked inside the
    caller's write transaction, so two requests cannot both create one. ``trigger``: who asked
    (:data:`TRIGGERS`)."""
    if trigger not in TRIGGERS:
        raise ValueError(f"Unknown trigger {trigger!r}: use one of {', '.join(TRIGGERS)}.")
    existing = active_job(s, project_id)
    if existing is not None:
        return existing, False
    job = TrainingJob(
        project_id=project_id,
        user_id=user_id,
        status="queued",
        config=config,
        message="queued",
        trigger=trigger,
        # the labels it will see (its snapshot moves the mark to what it read): the labels after
        # it count towards the next automatic retrain, whatever becomes of this job
        label_mark=last_label_event(s, project_id),
        created_at=clock(s),
    )
    s.add(job)
    s.flush()
    return view_of(job), True


def get_job(s: Session, job_id: int) -> JobView:
    return view_of(_get(s, job_id))


def latest_job(s: Session, project_id: int | None = None) -> JobView | None:
    """The project's newest job (any project's with ``None``)."""
    query = select(TrainingJob).order_by(TrainingJob.id.desc()).limit(1)
    if project_id is not None:
        query = query.where(TrainingJob.project_id == project_id)
    job = s.scalar(query)
    return view_of(job) if job is not None else None


def claim_job(s: Session, job_id: int, *, pid: int) -> JobView | None:
    """Move a queued job to running for worker ``pid``; None when it was cancelled before it
    started or another worker took it."""
    now = clock(s)
    claimed = s.execute(
        update(TrainingJob)
        .where(TrainingJob.id == job_id, TrainingJob.status == "queued")
        .values(
            status="running",
            started_at=now,
            worker_pid=pid,
            heartbeat_at=now,
            message="preparing data",
            phase=job_phases.PREPARING,
        )
    ).rowcount  # type: ignore[attr-defined]
    return get_job(s, job_id) if claimed else None


# The phases in which a registered job still works on its version (an anytime retrain improving
# it, its int8 copy, a held-out calibration): a cancel stops that work, the version serves on.
STOPPABLE = tuple(p.job for p in PHASES if p.stoppable)


def request_cancel(s: Session, job_id: int) -> JobView:
    """Cancel a job now: a queued one never starts; a running one ends as cancelled at once
    (issue 45 row 10: it waited for its worker's next poll, 8-30 s while the encoder loaded), its
    worker stops at its next poll, and nothing it makes any more counts (:func:`require_running`
    refuses its version, :func:`finish_job` and the log keep the job's end). A job whose version
    serves already (an anytime retrain's first pass, or later) keeps the best version it
    measured: its worker stops what is left at its next poll (improving it, the int8 copy, a
    held-out calibration: the version then serves as it is) and ends the job."""
    job = _get(s, job_id, lock=True)
    if job.status == "queued":
        job.status, job.message, job.finished_at = (
            "cancelled",
            "cancelled before it started",
            clock(s),
        )
    elif job.status == "running" and job.model_version_id is None:
        job.cancel_requested = True
        job.status, job.message, job.finished_at = (
            "cancelled",
            f"cancelled while {job.phase or 'running'}; the active model is unchanged",
            clock(s),
        )
        job.log = (job.log + _stamp(job.message))[-LOG_CHARS:]
    elif job.status == "running" and job.phase in STOPPABLE and not job.cancel_requested:
        job.cancel_requested = True
        v = job.model_version_id
        job.message = {
            CALIBRATING: f"stopping the held-out calibration; v{v} keeps serving with the quick "
            "thresholds",
            job_phases.INT8: f"stopping its int8 copy; v{v} keeps serving in fp32",
        }.get(job.phase, f"stopping; v{v} keeps serving as it is")
        job.log = (job.log + _stamp(f"cancel asked: {job.message}"))[-LOG_CHARS:]
    return view_of(job)


def cancel_requested(s: Session, job_id: int) -> bool:
    """Whether the job's worker should stop: a cancel was asked, or the job has already ended
    (reaped as failed while its worker was silent: nothing it makes any more may count)."""
    row = s.execute(
        select(TrainingJob.cancel_requested, TrainingJob.status).where(TrainingJob.id == job_id)
    ).first()
    return row is None or bool(row.cancel_requested) or row.status not in ACTIVE_STATUSES


def require_running(s: Session, job_id: int) -> None:
    """Raise :class:`JobEnded` (a :class:`ConflictError`) unless the job is still running.
    Called in the transaction that registers the job's model version, so a job reaped or
    cancelled meanwhile cannot register one."""
    job = _get(s, job_id, lock=True)
    if job.status != "running":
        raise JobEnded(
            job.status,
            f"This training job already ended as {job.status} ({job.message}); its model is "
            "discarded and the active model is unchanged.",
        )


def registered(
    s: Session, job_id: int, version_id: int, step: int | None = None, verdict: str = ""
) -> None:
    """Record the job's version (the ``step`` it serves, None while kept back; again for a better
    checkpoint) and its ``verdict``: from there on a cancel keeps that version."""
    job = _get(s, job_id, lock=True)
    job.model_version_id, job.served_step, job.verdict = version_id, step, verdict


def mark_labels(s: Session, job_id: int, mark: int) -> None:
    """Record the project's newest label event as the job reads its data (``label_mark``)."""
    _get(s, job_id, lock=True).label_mark = mark


def plan_steps(s: Session, job_id: int, steps: int) -> None:  # its last checkpoint's steps
    _get(s, job_id, lock=True).train_steps = steps


def heartbeat(s: Session, job_id: int) -> None:
    job = _locked(s, job_id)
    if job is not None:
        job.heartbeat_at = clock(s)


def tick(s: Session, job_id: int, *, share: float | None, eta: float | None) -> None:
    """The worker's read of its job, once a second: the share done (only ever raised) and the
    seconds left (None: no honest estimate); also a heartbeat."""
    job = _locked(s, job_id)
    if job is not None:
        job.heartbeat_at = clock(s)
        if job.status == "running":
            _advance(job, share)
            job.eta_seconds = eta


def log_line(
    s: Session,
    job_id: int,
    line: str,
    *,
    phase: str | None = None,
    share: float | None = None,
    eta: float | None = None,
) -> None:
    """Append a time-stamped line to the job's log, its message now; a ``phase`` of
    :data:`PHASES` is recorded with it (another phase starts its count again; the phase under
    way keeps it), with ``share``, the job's share done when it starts, and ``eta``, the seconds
    left as read when it starts (None: being estimated). The time left the last tick wrote
    counted down to the end of the phase before (a run of 3,078 test questions said "about 1 s
    to the end" for a second of the int8 phase, 37 s before it): a phase's line replaces it."""
    job = _locked(s, job_id)
    if job is not None:
        job.log = (job.log + _stamp(line))[-LOG_CHARS:]
        if job.status != "running":
            return  # ended, or handed back, while its worker went on: its own word stays shown
        job.message = line
        # a line of the phase under way keeps its count; another phase starts its own
        if phase is not None and phase != job.phase:
            job.phase = phase
            job.step = job.total = 0  # a count is the phase's own
        if phase is not None:
            job.eta_seconds = eta
        _advance(job, share)
        job.heartbeat_at = clock(s)


def set_progress(
    s: Session,
    job_id: int,
    *,
    step: int,
    total: int,
    loss: float | None,
    message: str,
    phase: str = TRAINING,
    share: float | None = None,
    eta: float | None = None,
) -> None:
    """The count of a measured phase: ``step`` of ``total`` done, the last loss (None outside
    training), ``share``, the whole job's share done now (only ever raised: a share below the
    one recorded leaves it), and the whole job's seconds left (None while being estimated)."""
    job = _locked(s, job_id)
    if job is not None and job.status == "running":  # a job handed back has no worker now
        job.phase, job.step, job.total, job.loss = phase, step, total, loss
        job.message, job.eta_seconds = message, eta
        _advance(job, share)
        job.heartbeat_at = clock(s)


def finish_job(
    s: Session, job_id: int, status: str, message: str, model_version_id: int | None = None
) -> None:
    """End a job as ``succeeded``, ``failed`` or ``cancelled`` with a last log line. A job that
    has already ended (reaped while its worker was silent) keeps its status: the late word is
    only logged."""
    job = _locked(s, job_id)
    if job is None:
        return
    if job.status not in ACTIVE_STATUSES:
        job.log = (job.log + _stamp(f"after the job had ended: {status}: {message}"))[-LOG_CHARS:]
        return
    job.status, job.message, job.finished_at = status, message, clock(s)
    job.log = (job.log + _stamp(message))[-LOG_CHARS:]
    if model_version_id is not None:
        job.model_version_id = model_version_id


def hand_back(s: Session, job_id: int, message: str) -> bool:
    """Queue a running job again as if never taken (its worker stops), ``message`` logged; the
    caller queues its message. A job whose version serves an earlier checkpoint while the rest
    trains (an anytime retrain's first pass) goes back with it: the next worker trains again and
    moves that version only to a better checkpoint. False when it is no longer running, or its
    version serves and is no longer improving (its int8 copy, its record: it ends there)."""
    if (job := _locked(s, job_id)) is None:
        return False
    job.log = (job.log + _stamp(message))[-LOG_CHARS:]
    if job.status != "running" or job.cancel_requested:
        return False
    if job.model_version_id is not None and not view_of(job).improving:
        return False
    job.status, job.message, job.phase, job.step, job.total = "queued", message, "", 0, 0
    job.loss, job.eta_seconds, job.progress = None, None, 0.0
    # heartbeat_at marks a missed queue message while queued (reap_lost_jobs): cleared
    job.started_at = job.heartbeat_at = job.worker_pid = None
    return True
