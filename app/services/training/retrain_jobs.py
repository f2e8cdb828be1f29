"""Retrain requests: validate the settings, queue one job per project, follow it, cancel it.

Nothing trains inside a web request: the job runs in a worker (:mod:`app.worker`, which runs
:func:`app.services.training.retrain.run_retrain`). This module never imports the worker: the entry point
puts the queue's enqueue function on ``TrainingQueue.enqueue``.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.access import ProjectHandle, open_project, writing
from app.access.actions import READ, TRAIN, Action, need
from app.config import DEPLOYMENT
from app.services.models.time_words import span
from app.services.models.version_files import check_budget
from app.services.training.job_plan import COUNTED, ETA_FROM_SECONDS, ETA_FROM_SHARE, PHASE_NAMES
from app.serving.training_queue import TrainingQueue
from core.encoding.registry import layer_count
from core.errors import logged, raise_if_bug
from core.multilabel.thresholds import DEFAULT_THRESHOLD, validate_threshold
from core.training import METHOD_LINES, TrainConfig, canonical_method, check_trainable
from storage import job_reaper, jobs
from storage.db import ROWS, Database
from storage.errors import NotFoundError
from storage.job_phases import EVALUATING, PREPARING, SAVING, SERVING, TRAINING
from storage.job_view import JobView
from storage.utterances import list_utterances

logger = logging.getLogger(__name__)

# The methods offered in the UI: a label, and the config that selects it.
METHOD_CHOICES: dict[str, dict[str, Any]] = {
    # Short enough for the dropdown at 1280 px; the line under it (method_line) says more.
    "ConvFiT Stage 2 · in-batch ranking (default)": {"method": "convfit"},
    "LoRA adapter · small artifact": {"method": "lora"},
}


def method_line(choice: str) -> str:
    """What a method of :data:`METHOD_CHOICES` (by its label, or by its name) is, in one line:
    what the Train tab shows under the method.

    >>> method_line("fast") == method_line(next(iter(METHOD_CHOICES)))
    True
    """
    name = str((METHOD_CHOICES.get(choice) or {"method": choice})["method"])
    return METHOD_LINES.get(canonical_method(name), "")


# Per-intent head thresholds (5-fold CV on the train rows), no longer a retrain option; an older
# version that recorded ``"tune": True`` is still evaluated with them (core.evaluation.multilabel).
TUNING_RETIRED = (
    "per-intent thresholds tuned by 5-fold cross-validation changed micro-F1 by -0.4, +2.1, 0.0 "
    "and +0.1 points on NLU++ banking and hotels (high and low data, 3 folds each) and exact "
    "match by -1.4 to +0.5, for five more head fits per retrain (bench/RESULTS.md): every intent "
    "uses the one threshold"
)


# One ``key=value`` per line or comma; a comma inside a value (``tags=["a","b"]``)
# stays in it: only a comma followed by the next ``key=`` separates.
_SEPARATOR = re.compile(r"\n|,(?=\s*[A-Za-z_][A-Za-z0-9_]*\s*=)")


def parse_settings(text: str | Sequence[str]) -> dict[str, Any]:
    """``"epochs=2, lr=1e-4"`` (or ``["epochs=2", "lr=1e-4"]``) → ``{"epochs": 2, "lr": 0.0001}``:
    values read as JSON when they parse, else kept as text. Names and ranges are checked by
    :meth:`RetrainSpec.parse` afterwards.

    >>> parse_settings('epochs=2, tags=["a","b"]')
    {'epochs': 2, 'tags': ['a', 'b']}
    """
    items = _SEPARATOR.split(text) if isinstance(text, str) else list(text)
    config: dict[str, Any] = {}
    for item in items:
        if not item.strip():
            continue
        key, sep, value = item.strip().partition("=")
        if not key.strip() or not sep:
            raise ValueError(f"Settings are KEY=VALUE, got {item.strip()!r}.")
        try:
            config[key.strip()] = json.loads(value)  # numbers, true/false, null, lists
        except json.JSONDecodeError:
            config[key.strip()] = value.strip()
    return config


@dataclass(frozen=True)
class RetrainSpec:
    """A retrain request, parsed and validated in one place: the encoder's :class:`TrainConfig`
    and the multi-label head's options. The Train tab's settings box, the CLI's ``--set``, the
    REST body (all through :meth:`parse`) and the worker (:meth:`from_job`) read it here.

    >>> spec = RetrainSpec.parse({"method": "convfit", "epochs": 1, "threshold": 0.4})
    >>> spec.encoder.epochs, spec.head
    (1, {'threshold': 0.4})
    >>> RetrainSpec.parse({"method": "fast"}).encoder.method  # ConvFiT's older name
    'convfit'
    >>> RetrainSpec.from_job(spec.to_job()) == spec
    True
    """

    encoder: TrainConfig
    threshold: float = DEFAULT_THRESHOLD

    @classmethod
    def parse(cls, config: Mapping[str, Any] | None) -> RetrainSpec:
        """Validate a request's settings; ``ValueError`` says what is wrong, in the user's words."""
        config = dict(config or {})
        theta = config.pop("threshold", DEFAULT_THRESHOLD)
        if isinstance(theta, bool) or not isinstance(theta, int | float):
            raise ValueError(f"threshold must be a number in (0, 1), got {theta!r}.")
        _refuse_tuning(config.pop("tune_thresholds", False))
        return cls(TrainConfig.from_dict(config), validate_threshold(float(theta)))

    @property
    def head(self) -> dict[str, Any]:
        """The head's options as the retrain (and the version's record) take them."""
        return {"threshold": self.threshold}

    def to_job(self) -> dict[str, Any]:
        """What a job stores: the encoder's settings, with the head's under ``"head"``."""
        return {**self.encoder.to_dict(), "head": self.head}

    @classmethod
    def from_job(cls, stored: Mapping[str, Any]) -> RetrainSpec:
        """The spec a job stored with :meth:`to_job` (a job without ``"head"`` has the default)."""
        config = dict(stored)
        config.pop(DEPLOYMENT, None)
        head = dict(config.pop("head", None) or {})
        _refuse_tuning(head.get("tune", False))  # a job queued before tuning left
        return cls(TrainConfig.from_dict(config), float(head.get("threshold", DEFAULT_THRESHOLD)))


def _refuse_tuning(tune: Any) -> None:
    """Per-intent threshold tuning left the retrain: ``false`` (its old off value) reads."""
    if tune is not False:
        raise ValueError(
            f"tune_thresholds={json.dumps(tune)} is no longer an option: {TUNING_RETIRED}."
        )


def request_retrain(
    training: TrainingQueue,
    p: ProjectHandle,
    config: dict[str, Any] | None = None,
    *,
    enqueue: bool = True,
    trigger: str = "manual",
) -> tuple[JobView, bool]:
    """Validate and queue a retrain. Returns (job, created): a second request while one is queued
    or running returns that job instead of queueing another. ``enqueue=False`` only records the
    job (the caller runs :func:`app.worker.execute_job` itself, as the CLI's inline mode does);
    ``trigger``: who asked (``"auto"``: :mod:`app.services.training.auto_retrain`)."""
    spec = RetrainSpec.parse(config)  # raises ValueError for unknown or out-of-range settings
    spec.encoder.check_layers(layer_count(p.base_encoder))  # freeze_layers within the encoder
    check_budget(training.db, p, training.settings.version_disk_mb)  # its versions' disk
    reap_dead(training)  # a job nothing will finish must not stand in for this one
    if training.artifacts is not None and training.settings.artifacts_remote:
        # a bucket that does not answer would take no model: refused now, not minutes later
        training.artifacts.check()  # ArtifactsUnavailable: REST answers 503 with Retry-After
    if enqueue and training.enqueue is None:
        raise RuntimeError("This process has no training queue (start the app with `serve`).")
    with writing(training.db, p) as s:
        existing = jobs.active_job(s, p.id)
        if existing is not None:
            return existing, False
        rows = list_utterances(s, p.id)
        check_trainable([r.labels for r in rows if r.split == "train" and r.labels])
        # the worker checks its own settings against these before it trains
        stored = {**spec.to_job(), DEPLOYMENT: training.settings.shared_with_workers()}
        view, created = jobs.create_job(s, p.id, stored, user_id=p.actor.id, trigger=trigger)
    if enqueue and created:
        assert training.enqueue is not None
        try:
            training.enqueue(view.id)
        except Exception as exc:
            reason = f"could not queue the job: {type(exc).__name__}: {exc}"
            with training.db.write(ROWS) as s:  # the job's row locks itself
                jobs.finish_job(s, view.id, "failed", reason)
            raise_if_bug(exc)
            raise QueueUnavailable(view.id, reason) from exc
    return view, created


class QueueUnavailable(RuntimeError):
    """The training queue (Redis) refused a job: the job is stored as failed with the reason, so
    the next request queues a new one. The REST API answers 503 with the reason and the job id."""

    def __init__(self, job_id: int, reason: str) -> None:
        super().__init__(f"Job #{job_id} failed: {reason}. Try again when the queue is back.")
        self.job_id = job_id


def _project_of(db: Database, job_id: int, action: Action) -> None:
    """Refuse a job of a project the acting user does not see (as if it did not exist), or in
    which their role is below what ``action`` needs (:mod:`app.access.actions`)."""
    with db.session() as s:
        project_id = jobs.get_job(s, job_id).project_id
    try:
        open_project(db, project_id, need=need(action))
    except NotFoundError:
        raise NotFoundError(f"No job #{job_id}.") from None


def cancel(db: Database, job_id: int) -> JobView:
    """Ask a job to stop: a queued job is cancelled at once, a running one within seconds."""
    _project_of(db, job_id, TRAIN)
    with db.write(ROWS) as s:  # the job's row locks itself
        return jobs.request_cancel(s, job_id)


# A queued job this old whose message the queue did not hold at two looks this far apart is lost
# (a worker takes a message, then claims its job: within milliseconds, or the database's busy
# timeout at worst; one look between the two must not fail it: storage.job_reaper.reap_lost_jobs).
LOST_AFTER_SECONDS = 60.0


def reap_dead(training: TrainingQueue) -> int:
    """Fail the jobs nothing will finish: running ones whose worker is gone (silent past
    ``settings.job_timeout``, or, when every worker runs on this host, whose pid is gone), and
    queued ones whose queue message is gone. Looking at a job, or asking for a retrain, is what
    notices. A look reads first, with no lock (most find nothing to do); only when it finds
    something does it take the write lock and look again: on SQLite a transaction that read
    before another writer committed could not write after it (a job's poll answered "the
    database is busy" when a worker ended its job meanwhile)."""
    alive = job_reaper.pid_alive if training.settings.local_workers else None
    timeout, queue = training.settings.job_timeout, training.enqueue
    with training.db.session() as s:
        dead = bool(job_reaper.dead_jobs(s, alive=alive, dead_after=timeout))
        waiting = queue is not None and job_reaper.has_queued_jobs(s, older_than=LOST_AFTER_SECONDS)
    pending = None
    if waiting and queue is not None:
        try:
            pending = queue.pending()
        except Exception:  # the queue is down: its messages may come back with it
            logged(logger, "could not read the training queue", level=logging.WARNING)
    if not dead and pending is None:
        return 0
    with training.db.write(ROWS) as s:
        n = job_reaper.reap_dead_jobs(s, alive=alive, dead_after=timeout)
        if pending is not None:
            n += job_reaper.reap_lost_jobs(s, pending, older_than=LOST_AFTER_SECONDS)
        return n


def job(training: TrainingQueue, job_id: int) -> JobView:
    """The job (one of a project the acting user sees)."""
    _project_of(training.db, job_id, READ)
    reap_dead(training)
    with training.db.session() as s:
        return jobs.get_job(s, job_id)


def latest_job(training: TrainingQueue, p: ProjectHandle) -> JobView | None:
    reap_dead(training)
    with training.db.session() as s:
        return jobs.latest_job(s, p.id)


def wait(
    training: TrainingQueue, job_id: int, timeout: float = 600.0, poll: float = 0.5
) -> JobView:
    end = time.monotonic() + timeout
    while True:
        view = job(training, job_id)
        if not view.active or time.monotonic() > end:
            return view
        time.sleep(poll)


def time_left(seconds: float | None, to: str = "") -> str:
    """``"about 2 min left"``, or to what it counts down (``to``): ``"about 8 s to a first
    version"``; ``"estimating…"`` while there is no measurement yet.

    Example:
        >>> time_left(None), time_left(8.4), time_left(130), time_left(5400)
        ('estimating…', 'about 8 s left', 'about 2 min left', 'about 1 h 30 min left')
        >>> time_left(8.4, "a first version")
        'about 8 s to a first version'
    """
    if seconds is None:
        return "estimating…"
    return f"about {span(seconds)} to {to}" if to else f"about {span(seconds)} left"


# The phases a job's time left counts down to a version in: until its version answers, the
# worker counts to the end of the next checkpoint's serving (app.services.training.job_plan)
TO_A_VERSION = (PREPARING, TRAINING, SAVING, EVALUATING, SERVING)


def counts_down_to(job: JobView) -> str:
    """What a running job's time left counts down to (issue 71 item 6): "a first version" while
    none of its checkpoints has been measured, "the verdict on the next checkpoint" once one has
    (a version serves, and the next checkpoint serves only if it measures better: a from-base
    run behind a continued version often does not, and no version comes), or "the end".

    Example:
        >>> from storage.job_view import JobView
        >>> job = JobView(3, 1, "running", "training", 6, 116, 0.4, 30.0, "", "", None, {})
        >>> counts_down_to(job)
        'a first version'
        >>> from dataclasses import replace
        >>> counts_down_to(replace(job, model_version_id=9, served_step=25, train_steps=116))
        'the verdict on the next checkpoint'
    """
    if job.phase not in TO_A_VERSION:
        return "the end"
    if job.served_step is None and job.model_version_id is None:
        return "a first version"
    last = job.train_steps
    if job.served_step is not None and last is not None and job.served_step >= last:
        return "the end"
    return "the verdict on the next checkpoint"


def describe(job: JobView) -> str:
    """A job's state in one line, the same in the Train tab and the CLI: the phase running now,
    its count where it has one, and the whole job's time left ("Training · step 120 of 300 ·
    loss 0.412 · about 2 min left", "Checking the int8 copy · about 40 s left"); "estimating…"
    until it means something, "longer than planned" when a phase has run well past its time
    (:class:`app.services.training.job_plan.Tracker`). A queued job waits for a worker; an ended one says
    how it ended.

    Example:
        >>> from storage.job_view import JobView
        >>> job = JobView(1, 1, "running", "evaluating", 120, 1500, None, 130.0,
        ...               "3 encoders · 120 of 1,500 utterances", "", None, {}, 0.8, 200.0)
        >>> describe(job)
        'Evaluating · 3 encoders · 120 of 1,500 utterances · about 2 min to a first version'
    """
    if job.status == "queued":
        return "waiting for a worker to take it"
    if job.status == "succeeded" and job.elapsed is not None:  # the whole wait, not training's
        lead = f"{job.verdict}. " if job.kept_back else ""  # what became of it, first
        return f"{lead}{job.message} The job took {span(job.elapsed)}."
    if not job.active or job.phase not in PHASE_NAMES or job.message == "cancelling…":
        return job.message
    if job.improving:  # an anytime retrain's first version serves while the rest trains
        return f"{job.verdict or serving_words(job)} · improving: {improving_words(job)}"
    name = PHASE_NAMES[job.phase]
    counted = job.phase in COUNTED and job.total
    detail = f" · {job.message}" if counted or job.phase == TRAINING else ""
    said = f"{job.verdict} · " if job.verdict else ""  # a checkpoint kept back, or the last one
    return f"{said}{name}{detail} · {left_words(job)}"


def improving_words(job: JobView) -> str:
    """What an improving job (:attr:`JobView.improving`) does and its time left: "step 60 of
    100 · about 30 s left", "measuring step 100 · …" while the last checkpoint is measured."""
    assert job.train_steps is not None and job.served_step is not None
    at = max(job.step if job.phase == TRAINING else 0, job.served_step)
    doing = (
        f"measuring step {job.train_steps:,}"  # the last checkpoint
        if job.phase in (SAVING, EVALUATING)
        else f"step {at:,} of {job.train_steps:,}"
    )
    return f"{doing} · {left_words(job)}"


def left_words(job: JobView) -> str:
    """A running job's time left (:func:`time_left`): "estimating…" while a counted phase times
    its own steps (a training stretch after the first pass's version included), "longer than
    planned" where a phase without a count has overrun its time
    (:class:`app.services.training.job_plan.Tracker`)."""
    measured = job.progress >= ETA_FROM_SHARE and (job.elapsed or 0.0) >= ETA_FROM_SECONDS
    if job.eta_seconds is None and measured and job.phase not in COUNTED:
        return "longer than planned"
    return time_left(job.eta_seconds, counts_down_to(job) if job.status == "running" else "")


def serving_words(job: JobView) -> str:
    """Which version a job's checkpoint serves now: "v8 serving (first pass)" for an early
    checkpoint no verdict names yet, else "v8 serving" (the job's verdict names its stage: a
    first pass, or a continuation of the active version, which the Train tab called "first
    pass" too); "" before one serves.

    Example:
        >>> from storage.job_view import JobView
        >>> job = JobView(3, 1, "running", "training", 60, 100, 0.4, 30.0, "", "", 8, {},
        ...               0.5, 20.0, served_step=25, train_steps=100)
        >>> serving_words(job), describe(job)
        ('v8 serving (first pass)', 'v8 serving (first pass) · improving: step 60 of 100 · about 30 s to the verdict on the next checkpoint')
    """
    if job.model_version_id is None or job.served_step is None:
        return ""
    early = job.train_steps is not None and job.served_step < job.train_steps
    return f"v{job.model_version_id} serving" + (
        " (first pass)" if early and not job.verdict else ""
    )
