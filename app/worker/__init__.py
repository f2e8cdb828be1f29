"""The worker side of training: a Huey queue stored in SQLite (no server), or in Redis when
``INTENT_STUDIO_QUEUE_URL`` is a ``redis://`` URL (a team's workers on other machines run the same
task code), the job reporter, :func:`execute_job`, and the process that
consumes the queue (``intent-studio worker``, or a child of ``serve`` that is restarted if it dies).

The queue only carries job ids: the job row (:mod:`storage.jobs`) is the source of truth for
status, progress, log and cancellation. The request side (:mod:`app.services.retrain_jobs`) never
imports this module: an entry point hands it :func:`queue_for` as ``TrainingQueue.enqueue``. Huey
(and the Redis client it brings) is imported by :func:`make_queue`, when a queue is made: a
process that runs a job inline (``intent-studio train`` without ``--queue``) never loads it.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING

from app.config import ENV_ARTIFACTS_URL, ENV_INT8, ENV_JOB_TIMEOUT, ENV_QUEUE_URL, Settings
from app.services.retrain import run_retrain
from app.services.retrain_jobs import DEPLOYMENT, RetrainSpec, reap_dead
from app.services.retrain_warm import warm_up_worker
from app.serving.factories import FactoryBuilder
from app.serving.state import ServingState
from app.worker.reporter import JobReporter
from core.errors import logged, raise_if_bug
from core.training import TrainingCancelled
from storage import jobs
from storage.db import ROWS, Database

if TYPE_CHECKING:
    from huey import Huey
    from huey.api import TaskWrapper

logger = logging.getLogger(__name__)

TASK_NAME = "train_job"
# How often a worker sweeps the artifact store for crashed writes (it removes only old ones).
SWEEP_SECONDS = 600.0
# Set by :class:`WorkerSupervisor` on its child: the server's pid, which the worker watches.
ENV_PARENT_PID = "INTENT_STUDIO_PARENT_PID"


def make_queue(settings: Settings) -> tuple[Huey, TaskWrapper]:
    """The project's queue and its training task (calling the task enqueues a job id)."""
    from huey import RedisHuey, SqliteHuey

    huey: Huey
    if settings.queue_url:
        huey = RedisHuey(name="intent-studio", url=settings.queue_url, results=False)
    else:
        huey = SqliteHuey(name="intent-studio", filename=str(settings.queue_path), results=False)

    def train_job(job_id: int) -> None:
        execute_job(_worker_context(settings), job_id)

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


def _worker_context(settings: Settings) -> ServingState:
    """One ServingState per worker process (keeps encoders and caches between jobs)."""
    global _worker_ctx
    with _worker_lock:
        if _worker_ctx is None:
            _worker_ctx = ServingState.open(settings)
        return _worker_ctx


def finish(
    db: Database, job_id: int, status: str, message: str, version_id: int | None = None
) -> None:
    with db.write(ROWS) as s:  # the job's row locks itself: no other project's writer waits
        jobs.finish_job(s, job_id, status, message, version_id)


def execute_job(ctx: ServingState, job_id: int) -> None:
    """Claim and run one queued training job (in the worker process, or inline in the CLI)."""
    with ctx.db.write(ROWS) as s:
        job = jobs.claim_job(s, job_id, pid=os.getpid())
    if job is None:
        return  # cancelled before it started, or taken by another worker
    differences = ctx.settings.differences_from(job.config.get(DEPLOYMENT))
    if differences:  # it would train for minutes, then fail or save where the app never looks
        finish(
            ctx.db,
            job_id,
            "failed",
            f"this worker's settings differ from the app's ({'; '.join(differences)}): set them "
            "alike where the worker runs; nothing was trained",
        )
        return
    reporter = JobReporter(ctx.training, job_id)
    try:
        spec = RetrainSpec.from_job(job.config)
        # the version answers from its ``serve`` phase on; the job ends once its record is
        # complete (on a CPU, its int8 copy checked and switched in)
        version_id, message = run_retrain(
            ctx, reporter, job_id, job.project_id, spec.encoder, spec.head
        )
        finish(ctx.db, job_id, "succeeded", message, version_id)
    except TrainingCancelled:
        finish(ctx.db, job_id, "cancelled", "cancelled; the active model is unchanged")
    except Exception as exc:
        logger.exception("job %s failed", job_id)
        finish(
            ctx.db, job_id, "failed", f"{type(exc).__name__}: {exc}; the active model is unchanged"
        )
        raise_if_bug(exc)  # the job failed with it; the queue (or the CLI) shows the bug too
    finally:
        reporter.close()


def reap(settings: Settings) -> int:
    """Fail the running jobs whose worker is gone (called when a worker starts or restarts)."""
    ctx = ServingState.open(settings)
    try:
        return reap_dead(ctx.training)
    finally:
        ctx.close()


def run_worker(settings: Settings) -> None:
    """Consume the queue in this process until SIGINT/SIGTERM."""
    from huey.consumer import Consumer

    ctx = _worker_context(settings)
    with ctx.db.session() as s:
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
    _sweep_periodically(ctx.factories)  # leftovers of crashed writers, now and every few minutes
    reap_dead(ctx.training)
    warm_up_worker(ctx)  # the base encoders and the device's kernels, before the first job
    huey, _ = make_queue(settings)
    consumer = Consumer(
        huey, workers=1, worker_type="thread", periodic=False, initial_delay=0.2, max_delay=1.0
    )
    signal.signal(signal.SIGTERM, lambda *_: os.kill(os.getpid(), signal.SIGINT))
    parent = os.environ.get(ENV_PARENT_PID, "")
    if parent.isdigit():
        _watch_parent(int(parent))
    where = _redacted(settings.queue_url) if settings.queue_url else settings.queue_path
    logger.info("worker %s consuming %s", os.getpid(), where)
    consumer.run()


def _sweep_periodically(factories: FactoryBuilder, every: float = SWEEP_SECONDS) -> None:
    """Sweep the artifact store (:meth:`storage.artifacts.ArtifactStore.sweep`: only what has
    been untouched for an hour) at once and then every ``every`` seconds, in the background."""

    def sweep() -> None:
        while True:
            try:
                if removed := factories.models.artifacts.sweep():
                    logger.info("swept %d leftover(s) of crashed writes", removed)
            except Exception:  # a bucket out of reach now may be back at the next sweep
                logged(logger, "could not sweep the artifact store", level=logging.WARNING)
            time.sleep(every)

    threading.Thread(target=sweep, name="artifact-sweep", daemon=True).start()


def _watch_parent(parent: int, every: float = 1.0) -> None:
    """Stop this worker gracefully once the server that started it is gone (killed with -9, its
    children are not): the job it is running finishes and is recorded, then the worker exits,
    instead of consuming the queue for a server that no longer supervises it."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        logger.warning("server %s is gone; finishing the current job, then stopping", parent)
        os.kill(os.getpid(), signal.SIGINT)  # the consumer's graceful stop

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def worker_env(settings: Settings) -> dict[str, str]:
    """The environment of a worker child: the queue, artifacts and timeout this process uses."""
    env = dict(os.environ)
    for name, value in (
        (ENV_QUEUE_URL, settings.queue_url),
        (ENV_ARTIFACTS_URL, settings.artifacts_url),
        (ENV_JOB_TIMEOUT, str(settings.job_timeout)),
        (ENV_INT8, "on" if settings.int8 else "off"),
    ):
        if value:
            env[name] = value
        else:
            env.pop(name, None)
    return env


def _redacted(url: str) -> str:
    """A URL without its password, for the log."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return parts._replace(netloc=netloc).geturl()


class WorkerSupervisor:
    """Runs ``intent-studio worker`` as a child process and restarts it if it exits."""

    def __init__(self, settings: Settings, *, restart_delay: float = 2.0) -> None:
        self.settings = settings
        self.restart_delay = restart_delay
        self.proc: subprocess.Popen[bytes] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _spawn(self) -> subprocess.Popen[bytes]:
        args = [sys.executable, "-m", "app", "--data-dir", str(self.settings.data_dir)]
        if self.settings.db_url:
            args += ["--db-url", self.settings.db_url]
        log = (self.settings.data_dir / "worker.log").open("ab")
        env = {**worker_env(self.settings), ENV_PARENT_PID: str(os.getpid())}
        return subprocess.Popen([*args, "worker"], stdout=log, stderr=subprocess.STDOUT, env=env)

    def start(self) -> None:
        self.proc = self._spawn()
        self._thread = threading.Thread(target=self._watch, name="worker-supervisor", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.is_set():
            proc = self.proc
            if proc is not None and proc.poll() is not None and not self._stop.is_set():
                logger.warning("training worker exited (%s); restarting", proc.returncode)
                reap(self.settings)
                time.sleep(self.restart_delay)
                self.proc = self._spawn()
            self._stop.wait(1.0)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def stop(self) -> None:
        self._stop.set()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
