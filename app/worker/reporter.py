"""What a running retrain tells the database: throttled progress writes, a heartbeat thread that
proves the worker alive and writes the job's share done and time left once a second, and cancel
polling (:class:`JobReporter`, the :class:`app.services.training.retrain.Reporter` a worker hands
:func:`app.services.training.retrain.run_retrain`). Each write locks the job's row only
(:data:`storage.db.ROWS`): no project's writers wait for a heartbeat, nor it for them. A
stopping worker's job is stopped at the same polls, to be handed back to the queue
(:mod:`app.worker.stopping`). A job writes its versions to a bucket patiently
(:func:`patient`): an outage as it uploads is waited out, not a failed training."""

from __future__ import annotations

import logging
import math
import threading
import time
from typing import Any

from app.config import Settings
from app.services.training.job_plan import JobPlan, Tracker
from app.services.training.retrain import EvalProgress
from app.services.training.retrain_state import Reporter, RetrainRun
from app.serving.state import ServingState
from app.serving.training_queue import TrainingQueue
from app.worker.cpu_share import CpuShare
from app.worker.stopping import StopRequest
from core.errors import logged
from core.training import TrainingCancelled, TrainProgress
from storage import jobs
from storage.artifacts import ArtifactStore
from storage.db import ROWS
from storage.job_phases import CALIBRATING, EVALUATING, INT8, REGISTERING, SERVING, TRAINING
from storage.patience import Patience
from storage.remote_artifacts import RemoteArtifactStore

logger = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 5.0
# How long a job's write of its version waits for a model store that does not answer, trying
# again meanwhile (then it fails, the active model unchanged): the API answers 503 meanwhile.
STORE_PATIENCE_S = 300.0


def heartbeat_seconds(settings: Settings) -> float:
    """How often a running job proves its worker alive: six beats fit in the job timeout."""
    return min(HEARTBEAT_SECONDS, settings.job_timeout / 6)


class JobReporter:
    """Throttled progress writes, a heartbeat thread and cancel polling for one running job.

    The job's share done and its time left come from a :class:`app.services.training.job_plan.Tracker`
    of the retrain's plan: every progress write carries them, and the heartbeat thread writes
    them once a second (a phase without a count moves by its time; the time left goes on with
    the clock between counts)."""

    def __init__(
        self,
        training: TrainingQueue,
        job_id: int,
        stop: StopRequest | None = None,
        cpu: CpuShare | None = None,
    ) -> None:
        self.training = training
        self.job_id = job_id
        self.worker_stop = stop
        self.cpu = cpu  # the threads it computes on, beside the app (app.worker.cpu_share)
        # set once a poll stopped the job for its worker's stop: it goes back to the queue
        self.handing_back = False
        self._last_write = 0.0
        self._phase = ""
        self._last_poll = 0.0
        self._cancel = False
        self._stop = threading.Event()
        self._every = heartbeat_seconds(training.settings)
        self._lock = threading.Lock()
        self._tracker = Tracker(started=time.monotonic())  # the job was claimed just before
        self._beat = threading.Thread(target=self._heartbeat, name="job-heartbeat", daemon=True)
        self._beat.start()

    def _heartbeat(self) -> None:
        while not self._stop.wait(min(1.0, self._every)):
            with self._lock:
                planned = self._tracker.plan is not None
                share, eta = self._tracker.read(time.monotonic())
            try:
                with self.training.db.write(ROWS) as s:
                    if planned:
                        jobs.tick(s, self.job_id, share=share, eta=eta)
                    else:
                        jobs.heartbeat(s, self.job_id)
            except Exception:  # the database away a moment: the next beat tries again
                logged(logger, "heartbeat failed")

    def _read(self) -> tuple[float | None, float | None]:
        with self._lock:
            if self._tracker.plan is None:
                return None, None
            return self._tracker.read(time.monotonic())

    def plan(self, plan: JobPlan) -> None:
        with self._lock:
            self._tracker.plan = plan
        if plan.steps:
            with self.training.db.write(ROWS) as s:
                jobs.plan_steps(s, self.job_id, plan.steps)

    def log(self, line: str, *, phase: str | None = None) -> None:
        if phase is not None:
            with self._lock:
                self._tracker.enter(phase, time.monotonic())
        share, left = self._read()  # the time left from the phase's start, not the last tick's
        with self.training.db.write(ROWS) as s:
            jobs.log_line(s, self.job_id, line, phase=phase, share=share, eta=left)

    def _due(self, phase: str, done: bool) -> bool:
        """At most one progress write a second, but always a phase's first and last."""
        now = time.monotonic()
        if now - self._last_write < 1.0 and not done and phase == self._phase:
            return False
        self._last_write, self._phase = now, phase
        return True

    def _count(self, done: int, total: int, eta: float | None) -> tuple[Any, Any]:
        with self._lock:
            self._tracker.count(done, total, time.monotonic(), eta)
        return self._read()

    def progress(self, p: TrainProgress) -> None:
        # the held-out encoders' steps are counted by their training, within their own phase
        message = f"step {p.step:,} of {p.total:,} · loss {p.loss:.3f}"
        self._counted(p.step, p.total, p.eta, (CALIBRATING, TRAINING), float(p.loss), message)

    def evaluation(self, p: EvalProgress) -> None:
        # the int8 copy's own measurement is counted by the evaluation, within the int8 phase
        message = f"{p.encoders} encoders · {p.done:,} of {p.total:,} utterances"
        self._counted(p.done, p.total, p.eta, (INT8, EVALUATING), None, message)

    def vectors(self, done: int, total: int, eta: float | None) -> None:
        # the first card's utterances in the space that serves from now: registering's count
        # once an int8 copy is switched in, else serving's (counted only when there are some)
        message = f"the first card's utterances · {done:,} of {total:,}"
        self._counted(done, total, eta, (REGISTERING, SERVING), None, message)

    def _counted(
        self,
        done: int,
        total: int,
        eta: float | None,
        phases: tuple[str, str],
        loss: float | None,
        message: str,
    ) -> None:
        """One count of a counted phase: the CPU share adjusted, the count tracked, and written
        (:meth:`_due`) under ``phases[0]`` while the job is in that phase, else ``phases[1]``."""
        if self.cpu is not None:
            self.cpu.adjust()
        share, left = self._count(done, total, eta)
        phase = phases[0] if self._tracker.phase == phases[0] else phases[1]
        if not self._due(phase, done >= total):
            return
        with self.training.db.write(ROWS) as s:
            jobs.set_progress(
                s,
                self.job_id,
                phase=phase,
                step=done,
                total=total,
                loss=loss,
                message=message,
                share=share,
                eta=left,
            )

    def should_cancel(self, *, fresh: bool = False) -> bool:
        """Whether the job stops here: cancelled, ended meanwhile, or its worker is stopping
        and the job would not end within the grace left (:attr:`handing_back`): one still
        preparing (no phase entered yet) never would (its training is all ahead, and it has
        made nothing: issue 73 item 12, it waited for the grace's end). The database is read
        at most every 0.5 s (a step polls), or now when ``fresh`` (before work that counts:
        a checkpoint's save and measurement)."""
        preparing = self._tracker.phase == ""
        left = math.inf if preparing else self._read()[1]
        if self.worker_stop is not None and self.worker_stop.hand_back_now(left):
            self.handing_back = True
            return True
        now = time.monotonic()
        if fresh or now - self._last_poll >= 0.5:
            self._last_poll = now
            with self.training.db.session() as s:
                self._cancel = jobs.cancel_requested(s, self.job_id)
        return self._cancel

    def close(self) -> None:
        """Stop the heartbeat and wait for its last write (a thread left writing while the
        process exits would be cut off mid-transaction)."""
        self._stop.set()
        if self._beat is not threading.current_thread():
            self._beat.join(10.0)


def retrain_run(serving_state: ServingState, job_id: int, reporter: Reporter) -> RetrainRun:
    """The pieces of this process one retrain job uses (its phases take nothing else)."""
    return RetrainRun(
        live=serving_state.live,
        artifacts=patient(serving_state.artifacts, reporter),
        budget=serving_state.models.budget,
        device=serving_state.settings.device,
        int8=serving_state.settings.int8,
        job_id=job_id,
        reporter=reporter,
    )


def patient(artifacts: ArtifactStore, reporter: Reporter) -> ArtifactStore:
    """The job's artifact store: a bucket that does not answer as a version is written is
    waited for (:mod:`storage.patience`, up to :data:`STORE_PATIENCE_S`; the job's log says so),
    while a cancel or the worker's stop still ends the job at once (issue 73 item 14: an outage
    of 33 s failed the retrain whose upload met it). A folder answers or fails for good."""
    if not isinstance(artifacts, RemoteArtifactStore):
        return artifacts

    def stop() -> None:
        if reporter.should_cancel():
            raise TrainingCancelled("stopped while the model store was not answering")

    return artifacts.patient(Patience(STORE_PATIENCE_S, tell=reporter.log, stop=stop))
