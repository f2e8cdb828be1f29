"""Background jobs on a Huey queue stored in SQLite (no server needed; the same task code runs on
Huey's Redis storage for a team: ``RedisHuey`` instead of ``SqliteHuey``).

The queue only carries job ids: the ``training_jobs`` row is the source of truth for status,
progress, log and cancellation. ``intent-studio serve`` starts one worker process beside the app
and restarts it if it dies; ``intent-studio worker`` runs one on its own (e.g. on a GPU machine
pointing at the same database and data directory).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from huey import SqliteHuey
from huey.api import TaskWrapper

from app.config import Settings

logger = logging.getLogger(__name__)

TASK_NAME = "train_job"


def make_queue(settings: Settings) -> tuple[SqliteHuey, TaskWrapper]:
    """The project's queue and its training task (calling the task enqueues a job id)."""
    huey = SqliteHuey(name="intent-studio", filename=str(settings.queue_path), results=False)

    def train_job(job_id: int) -> None:
        from app.services.training import execute_job

        execute_job(_worker_context(settings), job_id)

    return huey, huey.task(name=TASK_NAME)(train_job)


def enqueue_training(settings: Settings, job_id: int) -> None:
    _, task = make_queue(settings)
    task(job_id)


_worker_ctx: Any = None
_worker_lock = threading.Lock()


def _worker_context(settings: Settings) -> Any:
    """One AppContext per worker process (keeps encoders and caches between jobs)."""
    global _worker_ctx
    with _worker_lock:
        if _worker_ctx is None:
            from app.context import AppContext

            _worker_ctx = AppContext(settings)
        return _worker_ctx


def run_worker(settings: Settings) -> None:
    """Consume the queue in this process until SIGINT/SIGTERM."""
    from huey.consumer import Consumer

    from app.services.training import reap_dead_jobs

    ctx = _worker_context(settings)
    ctx.artifacts.sweep_tmp()  # leftovers of a crashed worker
    reap_dead_jobs(ctx)
    huey, _ = make_queue(settings)
    consumer = Consumer(
        huey, workers=1, worker_type="thread", periodic=False, initial_delay=0.2, max_delay=1.0
    )
    signal.signal(signal.SIGTERM, lambda *_: os.kill(os.getpid(), signal.SIGINT))
    logger.info("worker %s consuming %s", os.getpid(), settings.queue_path)
    consumer.run()


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
        return subprocess.Popen([*args, "worker"], stdout=log, stderr=subprocess.STDOUT)

    def start(self) -> None:
        self.proc = self._spawn()
        self._thread = threading.Thread(target=self._watch, name="worker-supervisor", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.is_set():
            proc = self.proc
            if proc is not None and proc.poll() is not None and not self._stop.is_set():
                logger.warning("training worker exited (%s); restarting", proc.returncode)
                from app.context import AppContext
                from app.services.training import reap_dead_jobs

                ctx = AppContext(self.settings)
                reap_dead_jobs(ctx)
                ctx.close()
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


def queue_file_exists(settings: Settings) -> bool:
    return Path(settings.queue_path).exists()
