"""The worker side of training: a Huey queue stored in SQLite (no server), or in Redis when
``INTENT_STUDIO_QUEUE_URL`` is a ``redis://`` URL (a team's workers on other machines run the same
task code), the job reporter, :func:`execute_job`, and the process that
consumes the queue (``intent-studio worker``, or a child of ``serve``: :mod:`app.worker.supervisor`),
which stops without losing its job (:mod:`app.worker.stopping`) and lets go of the models it
no longer needs between jobs (:func:`release_between_jobs`).

The queue only carries job ids: the job row (:mod:`storage.jobs`) is the source of truth for
status, progress, log and cancellation. The request side (:mod:`app.services.training.retrain_jobs`) never
imports this module: an entry point hands it :func:`queue_for` as ``TrainingQueue.enqueue``. Huey
(and the Redis client it brings) is imported by :func:`make_queue`, when a queue is made: a
process that runs a job inline (``intent-studio train`` without ``--queue``) never loads it.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from typing import TYPE_CHECKING

from app.config import Settings
from app.perimeter.in_use import Activity, server_warming
from app.services.models.version_files import after_job
from app.services.training.retrain import Kept, run_retrain
from app.services.training.retrain_jobs import DEPLOYMENT, RetrainSpec, reap_dead
from app.services.training.retrain_warm import warm_up_worker
from app.serving.compute import ComputeBudget
from app.serving.factories import FactoryBuilder
from app.serving.state import ServingState
from app.worker.auto import watch_labels
from app.worker.cpu_share import CpuShare, lower_priority, share_policy
from app.worker.fair_queue import take_turn
from app.worker.handing_back import finish, hand_back, hand_back_overdue, requeue
from app.worker.reporter import JobReporter, retrain_run
from app.worker.stopping import STOP, StopRequest
from app.worker.supervisor import ENV_PARENT_PID, WorkerSupervisor, worker_env
from core.errors import logged, raise_if_bug
from core.training import TrainingCancelled
from storage import jobs
from storage.db import ROWS
from storage.errors import ArtifactsUnavailable, JobEnded
from storage.job_view import ACTIVE_STATUSES
from storage.versions import active_version_ids

if TYPE_CHECKING:
    from huey import Huey
    from huey.api import TaskWrapper

logger = logging.getLogger(__name__)

TASK_NAME = "train_job"
# How often a worker sweeps the artifact store for crashed writes (it removes only old ones).
SWEEP_SECONDS = 600.0


def make_queue(settings: Settings) -> tuple[Huey, TaskWrapper]:
    """The project's queue and its training task (calling the task enqueues a job id)."""
    from huey import RedisHuey, SqliteHuey

    huey: Huey
    if settings.queue_url:
        huey = RedisHuey(name="intent-studio", url=settings.queue_url, results=False)
    else:
        huey = SqliteHuey(name="intent-studio", filename=str(settings.queue_path), results=False)

    def train_job(job_id: int) -> None:
        serving_state = _worker_context(settings)
        try:  # the message wakes the worker: the fairest queued job runs (app.worker.fair_queue)
            execute_job(serving_state, take_turn(serving_state, job_id, STOP), STOP, _cpu)
        finally:
            release_between_jobs(serving_state)

    from app.worker.encoding import register  # chunks of rows a server hands out (issue 72)

    register(huey, settings)
    return huey, huey.task(name=TASK_NAME)(train_job)


class HueyQueue:
    """The queue an entry point gives to ``TrainingQueue.enqueue`` (:class:`app.serving.training_queue.JobQueue`):
    calling it queues a job id; :meth:`pending` says which ids the queue still holds."""

    def __init__(self, settings: Settings) -> None:
        self._huey, self._task = make_queue(settings)

    def __call__(self, job_id: int) -> None:
        self._task(job_id)

    def pending(self) -> set[int]:
        return {
            int(task.args[0])
            for task in self._huey.pending()
            if task.name == TASK_NAME and task.args and isinstance(task.args[0], int)
        }


def queue_for(settings: Settings) -> HueyQueue:
    """The training queue of these settings, as ``TrainingQueue.enqueue`` takes it."""
    return HueyQueue(settings)


_worker_ctx: ServingState | None = None
_worker_lock = threading.Lock()
# The cores this worker process leaves the app (run_worker sets it: app.worker.cpu_share).
_cpu: CpuShare | None = None


def _worker_context(settings: Settings) -> ServingState:
    """One ServingState per worker process (keeps encoders and caches between jobs)."""
    global _worker_ctx
    with _worker_lock:
        if _worker_ctx is None:
            _worker_ctx = ServingState.open(settings)
            _worker_ctx.training.enqueue = queue_for(settings)  # a job handed back is queued again
        return _worker_ctx


def execute_job(
    serving_state: ServingState,
    job_id: int,
    stop: StopRequest | None = None,
    cpu: CpuShare | None = None,
    *,
    anytime: bool = True,
) -> None:
    """Claim and run one queued training job (in the worker process, or inline in the CLI). A
    worker passes its ``stop``: once it is asked, a job not taken yet goes back to the queue, and
    a running one that would not end within the grace is handed back (:mod:`app.worker.stopping`);
    and its ``cpu``: the threads it computes on beside the app (:mod:`app.worker.cpu_share`).
    ``anytime``: someone waits on the app for a first version (off: the CLI runs its job
    itself and measures what will serve once, :func:`app.services.training.retrain.run_retrain`)."""
    if stop is not None and stop.requested:
        requeue(serving_state, job_id)  # taken off the queue as the stop came: for the next worker
        return
    with serving_state.db.write(ROWS) as s:
        job = jobs.claim_job(s, job_id, pid=os.getpid())
    if job is None:
        return  # cancelled before it started, or taken by another worker
    differences = serving_state.settings.differences_from(job.config.get(DEPLOYMENT))
    if differences:  # it would train for minutes, then fail or save where the app never looks
        finish(
            serving_state.db,
            job_id,
            "failed",
            f"this worker's settings differ from the app's ({'; '.join(differences)}): set them "
            "alike where the worker runs; nothing was trained",
        )
        return
    if stop is not None:  # at the grace's end, the main thread hands it back if need be
        stop.running = job_id
    reporter = JobReporter(serving_state.training, job_id, stop, cpu)
    try:
        spec = RetrainSpec.from_job(job.config)
        # the version answers from its ``serve`` phase on; the job ends once its record is
        # complete (on a CPU, its int8 copy checked and switched in)
        version_id, message = run_retrain(
            retrain_run(serving_state, job_id, reporter),
            job.project_id,
            spec.encoder,
            spec.head,
            trigger=job.trigger,
            anytime=anytime,
            job=job,
        )
        finish(serving_state.db, job_id, "succeeded", message, version_id)
    except Kept as kept:  # stopped while improving a version that serves: it keeps serving
        if reporter.handing_back:  # the next worker goes on improving it
            hand_back(serving_state, job_id)
        else:
            finish(serving_state.db, job_id, "cancelled", kept.message, kept.version_id)
    except TrainingCancelled:
        if reporter.handing_back:
            hand_back(serving_state, job_id)
        else:
            finish(
                serving_state.db, job_id, "cancelled", "cancelled; the active model is unchanged"
            )
    except JobEnded as ended:  # cancelled or reaped as its work was about to count: no bug
        if reporter.handing_back or ended.status in ACTIVE_STATUSES:  # another worker's now
            logger.info("job %s was handed back before it registered: %s", job_id, ended)
        else:  # its end stands; the late word is only logged
            finish(serving_state.db, job_id, ended.status, "what it made since is discarded")
    except ArtifactsUnavailable as exc:  # a server down, not a bug: one line, no traceback
        logger.warning("job %s failed: %s", job_id, exc)
        finish(serving_state.db, job_id, "failed", f"{exc} The active model is unchanged.")
    except Exception as exc:
        logger.exception("job %s failed", job_id)
        finish(
            serving_state.db,
            job_id,
            "failed",
            f"{type(exc).__name__}: {exc}; the active model is unchanged",
        )
        raise_if_bug(exc)  # the job failed with it; the queue (or the CLI) shows the bug too
    finally:
        if stop is not None:  # its end is written: nothing for the main thread to hand back
            stop.running = None
        reporter.close()
        after_job(serving_state.db, serving_state.artifacts, job.project_id)  # the retention rule
        serving_state.models.save_prefixes()  # the frozen layers' states, for the next process


def release_between_jobs(serving_state: ServingState) -> None:
    """What a worker lets go of once a job ended: the models of versions that serve nowhere
    (each job loaded the one it measured against, and a long-lived worker kept them all), and
    the memory freed meanwhile, given back to the system (glibc keeps freed pages otherwise)."""
    import contextlib
    import ctypes
    import gc

    try:
        with serving_state.db.session() as s:
            serving = active_version_ids(s)
        if dropped := serving_state.models.keep_only(serving):
            logger.info("let go of %d model(s) of versions that serve nowhere", dropped)
    except Exception:  # the next job loads what it needs again
        logged(logger, "could not let go of unused models", level=logging.WARNING)
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # not glibc: reused, not given back
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def run_worker(settings: Settings) -> None:
    """Consume the queue in this process until SIGTERM or SIGINT (:mod:`app.worker.stopping`:
    the running job ends within the grace or goes back to the queue); then every thread this
    worker started is joined, so the process exits 0 with nothing of its own inside torch."""
    from app.worker.consumer import Consumer  # Huey: only a worker that consumes loads it

    global _cpu
    if STOP.requested:  # stopped as it started (`intent-studio worker` obeys from its start)
        logger.info("worker %s stopped before it took a job", os.getpid())
        return
    serving_state = _worker_context(settings)
    _cpu = cpu_share_for(settings, serving_state.models.budget)
    with serving_state.db.session() as s:
        newest = jobs.latest_job(s)
    if newest is not None and (
        differences := settings.differences_from(newest.config.get(DEPLOYMENT))
    ):
        logger.warning(
            "this worker's settings differ from the app's (as of job #%d): %s; its jobs will be "
            "refused until they agree",
            newest.id,
            "; ".join(differences),
        )
    done = threading.Event()
    # leftovers of crashed writers, now and every few minutes
    sweeper = _sweep_periodically(serving_state.factories, done)
    reap_dead(serving_state.training)
    # the base encoders and the device's kernels, before the first job; then the int8 copy of
    # a base that projects never retrained serve; once the server beside it is warm
    warm_up_worker(
        serving_state.live,
        serving_state.models.budget,
        device=settings.device,
        int8=settings.int8,
        base_copies=True,
        stopping=lambda: STOP.requested,
        held=lambda: server_warming(settings.data_dir),
    )
    # the automatic retrains, as labels call for them
    watch_labels(serving_state.training, serving_state.models.budget, STOP, done)
    huey, _ = make_queue(settings)
    consumer = Consumer(
        huey,
        stop=STOP,
        grace=settings.stop_grace,
        overdue=lambda: hand_back_overdue(serving_state, STOP),
        workers=1,
        worker_type="thread",
        periodic=False,
        # an idle worker looks at the queue four times a second: a retrain's request waited up
        # to a second for it (0.5 s on average of a first version's 15), for one cheap read
        initial_delay=0.1,
        max_delay=0.25,
    )
    parent = os.environ.get(ENV_PARENT_PID, "")
    if parent.isdigit():
        _watch_parent(int(parent), done)
    where = _redacted(settings.queue_url) if settings.queue_url else settings.queue_path
    try:
        if not STOP.requested:  # a stop as it started: no job taken
            logger.info("worker %s consuming %s", os.getpid(), where)
            consumer.run()  # returns once the stop's job thread ended (joined)
    finally:
        done.set()
        sweeper.join(30.0)
        serving_state.close()
    logger.info("worker %s stopped", os.getpid())


def cpu_share_for(settings: Settings, budget: ComputeBudget) -> CpuShare:
    """The cores a worker leaves the app: where the budget says it shares them (a CPU) and it
    runs beside the app (the queue is this machine's), at a lower priority and one thread fewer
    while someone uses the app (``INTENT_STUDIO_WORKER_SHARE``: ``nice``, the priority only;
    ``off``, neither); else all of them, at its own priority."""
    policy = share_policy()
    if budget.shares_cores and settings.local_workers and policy != "off":
        lower_priority()
        return CpuShare(Activity(settings.data_dir) if policy == "threads" else None)
    return CpuShare(None)


def _sweep_periodically(
    factories: FactoryBuilder, done: threading.Event, every: float = SWEEP_SECONDS
) -> threading.Thread:
    """Sweep the artifact store (:meth:`storage.artifacts.ArtifactStore.sweep`: only what has
    been untouched for an hour) at once and then every ``every`` seconds, in the background,
    until ``done``."""

    def sweep() -> None:
        while not done.is_set():
            try:
                if removed := factories.models.artifacts.sweep():
                    logger.info("swept %d leftover(s) of crashed writes", removed)
            except Exception:  # a bucket out of reach now may be back at the next sweep
                logged(logger, "could not sweep the artifact store", level=logging.WARNING)
            done.wait(every)

    thread = threading.Thread(target=sweep, name="artifact-sweep", daemon=True)
    thread.start()
    return thread


def _watch_parent(parent: int, done: threading.Event, every: float = 1.0) -> None:
    """Stop this worker gracefully once the server that started it is gone (killed with -9, its
    children are not): the job it is running ends within the grace or goes back to the queue,
    then the worker exits, instead of consuming the queue for a server that no longer
    supervises it."""

    def watch() -> None:
        while os.getppid() == parent:
            if done.wait(every):
                return
        logger.warning("server %s is gone; stopping", parent)
        os.kill(os.getpid(), signal.SIGINT)  # the worker's graceful stop

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _redacted(url: str) -> str:
    """A URL without its password, for the log."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return parts._replace(netloc=netloc).geturl()


__all__ = [
    "ENV_PARENT_PID",
    "HueyQueue",
    "WorkerSupervisor",
    "execute_job",
    "hand_back",
    "make_queue",
    "queue_for",
    "release_between_jobs",
    "run_worker",
    "worker_env",
]
