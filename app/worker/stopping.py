"""How a worker stops (``docker stop``, Ctrl+C, its server gone) without losing its job.

SIGTERM and SIGINT both ask for the same graceful stop (:class:`StopRequest`): the worker takes no
new job, and its running job goes on for at most ``Settings.stop_grace`` seconds
(``INTENT_STUDIO_STOP_GRACE``, 30 by default). A job that has not ended by then, or that will
not (its time left, as the Train tab shows it, is longer than the grace left), is handed back at
its next check (every training step, every chunk an evaluation encodes): the job row is queued
again and its message put back on the queue, so the next worker starts it over; it is not
failed. A second signal hands the job back at its next check. The process then joins its
threads and exits 0. ``compose.yaml``'s ``stop_grace_period`` for the workers is the grace plus
:data:`STOP_MARGIN_S`, the longest a job may take from a check to the next one and the exit.

Huey's consumer is kept for what it does well (its worker thread, the queue's reads) with three
changes (:class:`Consumer`): its signal handlers are ours (Huey's made SIGTERM an immediate stop
that left the job's thread inside torch while the interpreter finalised: the job was abandoned
and the process sometimes aborted with exit 134); its worker logs a queue that does not answer
once when it goes and once when it is back, not a traceback a second (:class:`QueueReader`);
and its scheduler, which only serves tasks scheduled for later (this app schedules none), does
not poll the queue.

Example:
    >>> stop = StopRequest()
    >>> stop.requested, stop.hand_back_now(eta=None)
    (False, False)
    >>> stop.request(grace=30.0)
    >>> stop.hand_back_now(eta=5.0), stop.hand_back_now(eta=None), stop.hand_back_now(eta=60.0)
    (False, False, True)
    >>> stop.request(grace=30.0)  # a second signal: at the next check
    >>> stop.hand_back_now(eta=5.0)
    True
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from types import FrameType
from typing import Any

from huey.consumer import Consumer as HueyConsumer
from huey.consumer import Scheduler, Worker

logger = logging.getLogger(__name__)

# The most a job takes from one check to the next (a training step, an evaluation's chunk, the
# int8 copy's export, the registration) plus the exit: compose's stop_grace_period is the grace
# and this (tests/app/test_compose.py checks it).
STOP_MARGIN_S = 60
# While the queue does not answer, how often the worker says so again.
QUEUE_DOWN_REMINDER_S = 60.0


class StopRequest:
    """A worker's stop, once asked (see the module): when, with what grace, and whether the
    running job should be handed back now."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._deadline: float | None = None

    @property
    def requested(self) -> bool:
        with self._lock:
            return self._deadline is not None

    def request(self, grace: float) -> None:
        """The first call starts the grace; a later one ends it (hand back at the next check)."""
        now = time.monotonic()
        with self._lock:
            self._deadline = now + grace if self._deadline is None else now

    def hand_back_now(self, eta: float | None) -> bool:
        """Whether a running job whose time left is ``eta`` seconds (None: not known yet) should
        be handed back at this check: a stop was asked, and the grace is over or the job will
        not end within what is left of it."""
        with self._lock:
            if self._deadline is None:
                return False
            left = self._deadline - time.monotonic()
        return left <= 0 or (eta is not None and eta > left)


# The process's one stop (a worker process runs one consumer).
STOP = StopRequest()


class QueueReader(Worker):
    """Huey's worker thread, with a queue that does not answer (Redis down) logged as one
    warning when it goes, a reminder a minute, and one line when it is back."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.down_since: float | None = None
        self._reminded = 0.0

    def _unreachable(self, exc: Exception) -> None:
        now = time.monotonic()
        if self.down_since is None:
            self.down_since = self._reminded = now
            logger.warning(
                "the training queue is not answering (%s: %s); retrying every second",
                type(exc).__name__,
                exc,
            )
        elif now - self._reminded >= QUEUE_DOWN_REMINDER_S:
            self._reminded = now
            logger.warning(
                "the training queue has not answered for %.0f s (%s)",
                now - self.down_since,
                type(exc).__name__,
            )

    def loop(self, now: Any = None) -> None:
        try:
            task = self.huey.dequeue()
        except Exception as exc:
            self._unreachable(exc)
            self.sleep()
            return
        if self.down_since is not None:
            logger.info(
                "the training queue answers again (after %.0f s)",
                time.monotonic() - self.down_since,
            )
            self.down_since = None
        if task is None:
            if not self.huey.storage.blocking:
                self.sleep()
            return
        self.delay = self.default_delay
        try:
            self.huey.execute(task, now)
        except Exception:
            logger.exception("the training task %s failed", task.id)


class NoSchedule(Scheduler):
    """This app schedules no task for later (every job is queued at once): nothing to poll."""

    def loop(self, now: Any = None) -> None:
        self.stop_flag.wait(1.0)


class Consumer(HueyConsumer):  # type: ignore[misc]
    """Huey's consumer with the worker's own stop (see the module)."""

    worker_class = QueueReader
    scheduler_class = NoSchedule

    def __init__(self, huey: Any, *, stop: StopRequest, grace: float, **kwargs: Any) -> None:
        # a job handed back stops at its next check: the join ends within the margin
        super().__init__(huey, shutdown_timeout=grace + STOP_MARGIN_S, **kwargs)
        self.stop_request = stop
        self.grace = grace

    def _set_signal_handlers(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        first = not self.stop_request.requested
        self.stop_request.request(self.grace)
        # Huey's main loop sees the signal and stops gracefully: no new job, the running one
        # joined (it ends, or hands itself back, at its next check)
        self._signum, self._restart, self._graceful = signum, False, True
        if first:
            logger.warning(
                "%s: stopping; a running job ends within %.0f s or goes back to the queue",
                signal.Signals(signum).name,
                self.grace,
            )
        else:
            logger.warning("%s again: the running job goes back to the queue now", signum)
