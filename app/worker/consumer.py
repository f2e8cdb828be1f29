"""Huey's consumer as a worker runs it (``intent-studio worker``): kept for what it does well (its
worker thread, the queue's reads) with four changes (:class:`Consumer`): its signal handlers are
the worker's stop (:mod:`app.worker.stopping`; Huey's made SIGTERM an immediate stop that left
the job's thread inside torch while the interpreter finalised: the job was abandoned and the
process sometimes aborted with exit 134); its shutdown waits for the job's thread until the
stop's grace ends, then calls ``overdue`` (the worker hands the job back and leaves), not until
Huey's shutdown timeout, past which the job stayed running (issue 73 item 12); its worker logs a
queue that does not answer once when it goes and once when it is back, not a traceback a second
(:class:`QueueReader`); and its scheduler, which only serves tasks scheduled for later (this app
schedules none), does not poll the queue.

Huey is imported here, by :func:`app.worker.run_worker` when a worker starts: a job run inline
never loads this module (issue 59 item 6).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from huey.consumer import Consumer as HueyConsumer
from huey.consumer import Scheduler, Worker

from app.worker.stopping import STOP_MARGIN_S, StopRequest, obey_signals
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

    def __init__(
        self,
        huey: Any,
        *,
        stop: StopRequest,
        grace: float,
        overdue: Callable[[], None] = lambda: None,
        **kwargs: Any,
    ) -> None:
        # a job handed back stops at its next check: the join ends within the margin
        super().__init__(huey, shutdown_timeout=grace + STOP_MARGIN_S, **kwargs)
        self.stop_request = stop
        self.grace = grace
        self.overdue = overdue

    def _set_signal_handlers(self) -> None:
        obey_signals(self.stop_request, self.grace, then=self._stopping)

    def _stopping(self, signum: int) -> None:
        # Huey's main loop sees the signal and stops gracefully: no new job, the running one
        # joined (it ends, or hands itself back, at its next check)
        self._signum, self._restart, self._graceful = signum, False, True

    def _join_workers(self) -> bool:
        """The job's thread has until the grace ends (a second signal ends it at once) to end
        its job or hand it back; still at work then, it is ``overdue``; then Huey's join."""
        threads = [thread for _, thread in self.worker_threads]
        while self.stop_request.requested and any(t.is_alive() for t in threads):
            left = self.stop_request.left() or 0.0
            if left <= 0:
                self.overdue()
                break
            for thread in threads:
                thread.join(min(0.25, left))
        return bool(super()._join_workers())
