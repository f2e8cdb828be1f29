"""``serve``'s training worker: ``intent-studio worker`` as a child process, restarted if it
dies, and the environment it gets (the queue, artifacts, timeout and grace of the server)."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from app.config import (
    ENV_ARTIFACTS_URL,
    ENV_INT8,
    ENV_JOB_TIMEOUT,
    ENV_QUEUE_URL,
    ENV_STOP_GRACE,
    Settings,
)
from app.services.training.retrain_jobs import reap_dead
from app.serving.state import ServingState
from app.worker.stopping import SERVER_STOPS, STOP_MARGIN_S

logger = logging.getLogger(__name__)

# Set by :class:`WorkerSupervisor` on its child: the server's pid, which the worker watches.
ENV_PARENT_PID = "INTENT_STUDIO_PARENT_PID"
# A stop that waits longer than this for its worker says what it waits for (an idle worker
# stops within it).
SAY_AFTER_S = 2.0
# ...and how a second Ctrl+C is offered then (tests' servers press it when they read it).
HAND_BACK_NOW = "Ctrl+C again to have it handed back now."


def reap(settings: Settings) -> int:
    """Fail the running jobs whose worker is gone (called when a worker starts or restarts)."""
    serving_state = ServingState.open(settings)
    try:
        return reap_dead(serving_state.training)
    finally:
        serving_state.close()


def worker_env(settings: Settings) -> dict[str, str]:
    """The environment of a worker child: the queue, artifacts and timeout this process uses."""
    env = dict(os.environ)
    for name, value in (
        (ENV_QUEUE_URL, settings.queue_url),
        (ENV_ARTIFACTS_URL, settings.artifacts_url),
        (ENV_JOB_TIMEOUT, str(settings.job_timeout)),
        (ENV_INT8, "on" if settings.int8 else "off"),
        (ENV_STOP_GRACE, str(settings.stop_grace)),
    ):
        if value:
            env[name] = value
        else:
            env.pop(name, None)
    return env


class WorkerSupervisor:
    """Runs ``intent-studio worker`` as a child process and restarts it if it dies (a worker
    that exits 0 was asked to stop: Ctrl+C in a terminal reaches it before the server)."""

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
            if proc is not None and proc.poll() == 0:  # asked to stop (Ctrl+C reaches it first)
                return
            if proc is not None and proc.poll() is not None and not self._stop.is_set():
                logger.warning("training worker exited (%s); restarting", proc.returncode)
                reap(self.settings)
                time.sleep(self.restart_delay)
                self.proc = self._spawn()
            self._stop.wait(1.0)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def stop(self, say: Callable[[str], None] = logger.info) -> None:
        """Stop the worker as ``docker stop`` would, with :data:`~app.worker.stopping.SERVER_STOPS`
        (a first stop, never a second: a terminal's Ctrl+C may have reached the worker already),
        and wait as long as its job may take to end or go back to the queue
        (:mod:`app.worker.stopping`) before SIGKILL. ``say`` tells
        the person stopping it what a wait of more than :data:`SAY_AFTER_S` waits for (a job
        under way: up to the grace).

        Ctrl+C during the wait (a KeyboardInterrupt here) is the stop's second signal: the
        worker is sent SIGINT, which hands its job back to the queue at its next check
        (:mod:`app.worker.stopping`; a terminal's Ctrl+C has reached it too), and that is waited
        for, where the server printed a KeyboardInterrupt traceback and left the worker to stop
        alone. Once more stops waiting: the worker is killed, and its job, found dead, starts
        again (as after ``kill -9``)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(SERVER_STOPS)
        try:
            try:
                proc.wait(SAY_AFTER_S)
                return
            except subprocess.TimeoutExpired:
                say(
                    f"Waiting for the training worker (pid {proc.pid}) to end its job or hand it "
                    f"back to the queue: up to {self.settings.stop_grace} s. {HAND_BACK_NOW}"
                )
            proc.wait(self.settings.stop_grace + STOP_MARGIN_S - SAY_AFTER_S)
        except subprocess.TimeoutExpired:
            proc.kill()
        except KeyboardInterrupt:
            self._hand_back_now(proc, say)
        proc.wait(10)

    @staticmethod
    def _hand_back_now(proc: subprocess.Popen[bytes], say: Callable[[str], None]) -> None:
        say("Ctrl+C again: the training worker hands its job back to the queue at its next check.")
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(STOP_MARGIN_S)
        except (subprocess.TimeoutExpired, KeyboardInterrupt):
            say("Stopped without waiting: the training worker is killed; its job starts again.")
            proc.kill()
