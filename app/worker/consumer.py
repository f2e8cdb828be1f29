"""Huey's consumer as a worker runs it (``intent-studio worker``): kept for what it does well (its
worker thread, the queue's reads) with three changes (:class:`Consumer`): its signal handlers are
the worker's stop (:mod:`app.worker.stopping`; Huey's made SIGTERM an immediate stop that left
the job's thread inside torch while the interpreter finalised: the job was abandoned and the
process sometimes aborted with exit 134); its worker logs a queue that does not answer once when
it goes and once when it is back, not a traceback a second (:class:`QueueReader`); and its
scheduler, which only serves tasks scheduled for later (this app schedules none), does not poll
the queue.

Huey is imported here, by :func:`app.worker.run_worker` when a worker starts: a job run inline
never loads this module (issue 59 item 6).
"""

from __future__ import annotations

import logging
import signal
import time
from types import FrameType
from typing import Any

from huey.consumer import Consumer as HueyConsumer
from huey.consumer import Scheduler, Worker

from app.worker.stopping import STOP_MARGIN_S, StopRequest
from core.errors import logged, raise_if_bug

logger = logging.getLogger(__name__)

# While the queue does not answer, how often the worker says so again.
QUEUE_DOWN_REMINDER_S = 60.0


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
        except Exception as exc:  # the queue's server does not answer: said once, tried again
            raise_if_bug(exc)
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
        except Exception:  # Huey's own bookkeeping (the job's end is recorded by execute_job)
            logged(logger, "the training task %s failed", task.id)


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
