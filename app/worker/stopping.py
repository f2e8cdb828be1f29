"""How a worker stops (``docker stop``, Ctrl+C, its server gone) without losing its job.

SIGTERM and SIGINT both ask for the same graceful stop (:class:`StopRequest`): the worker takes no
new job, and its running job goes on for at most ``Settings.stop_grace`` seconds
(``INTENT_STUDIO_STOP_GRACE``, 30 by default). A job that has not ended by then, or that will
not (its time left, as the Train tab shows it, is longer than the grace left), is handed back at
its next check (every training step, every chunk an evaluation encodes): the job row is queued
again and its message put back on the queue, so the next worker starts it over; it is not
failed. A second signal hands the job back at its next check. The process then joins its
threads and exits 0.

``serve`` stops the worker it supervises with :data:`SERVER_STOPS` (SIGUSR2), which asks for
the stop only if none was asked yet: a terminal's Ctrl+C reaches the whole process group, the
worker first, so the server's SIGTERM that followed counted as the second signal and handed a
job back at once that had the grace to finish (systemd's stop of a control group did the same).

``compose.yaml``'s ``stop_grace_period`` for the workers is the grace plus :data:`STOP_MARGIN_S`,
the longest a job may take from a check to the next one and the exit.

Issue 73 item 12: a job still preparing goes back at its next check (it has all its training
ahead and has made nothing: :class:`app.worker.reporter.JobReporter`); and a job whose thread is
still in a step that checks nothing when the grace ends (an encoder loading, a lock waited for,
a download) is handed back by the worker's main thread, which then leaves at once (:func:`leave`):
Huey's shutdown timeout (grace + margin) no longer decides, where it left the job running, to be
failed as lost. The worker obeys the stop from its first moment (:func:`obey_signals`, before
its heavy imports): stopped as it starts, it exits 0 (it was killed by SIGTERM's default, −15).

Huey's consumer, with this stop as its signal handlers, is :class:`app.worker.consumer.Consumer`
(a module of its own: a job run inline, ``intent-studio train`` without ``--queue``, loads this
one and never Huey).

Example:
    >>> stop = StopRequest()
    >>> stop.requested, stop.hand_back_now(eta=None)
    (False, False)
    >>> stop.request(grace=30.0)  # the first
    True
    >>> stop.hand_back_now(eta=5.0), stop.hand_back_now(eta=None), stop.hand_back_now(eta=60.0)
    (False, False, True)
    >>> stop.request(grace=30.0, again=False), stop.hand_back_now(eta=5.0)  # the server's stop
    (False, False)
    >>> stop.request(grace=30.0), stop.hand_back_now(eta=5.0)  # a second signal: at the next check
    (False, True)
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import NoReturn

logger = logging.getLogger(__name__)

# The most a job takes from one check to the next (a training step, an evaluation's chunk, the
# int8 copy's export, the registration) plus the exit: compose's stop_grace_period is the grace
# and this (tests/app/test_compose.py checks it).
STOP_MARGIN_S = 60
# The signal ``serve`` stops its worker with (app.worker.supervisor): a first stop, never a
# second one (the worker may have had the same Ctrl+C already).
SERVER_STOPS = signal.SIGUSR2


class StopRequest:
    """A worker's stop, once asked (see the module): when, with what grace, and whether the
    running job should be handed back now."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._deadline: float | None = None
        self.running: int | None = None  # the job this worker runs now (claimed, not ended)

    @property
    def requested(self) -> bool:
        with self._lock:
            return self._deadline is not None

    def request(self, grace: float, *, again: bool = True) -> bool:
        """The first call starts the grace; a later one ends it (hand back at the next check),
        unless ``again`` is False (then it changes nothing). Returns whether it was the first."""
        now = time.monotonic()
        with self._lock:
            first = self._deadline is None
            if first or again:
                self._deadline = now + grace if first else now
            return first

    def left(self) -> float | None:
        """The seconds left of the grace (0 once over); None while no stop was asked."""
        with self._lock:
            if self._deadline is None:
                return None
            return max(0.0, self._deadline - time.monotonic())

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


def obey_signals(
    stop: StopRequest, grace: float, then: Callable[[int], None] | None = None
) -> None:
    """From now on SIGTERM and SIGINT ask ``stop`` (the first starts the ``grace``, a second
    ends it), then call ``then`` with the signal (Huey's consumer, once it runs, stops taking
    jobs); :data:`SERVER_STOPS` asks it only when nothing did yet. ``intent-studio worker`` calls
    it first thing, the consumer again when it starts."""

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        name = "its server stops" if signum == SERVER_STOPS else signal.Signals(signum).name
        first = stop.request(grace, again=signum != SERVER_STOPS)
        if then is not None:
            then(signum)
        if first:
            logger.warning(
                "%s: stopping; a running job ends within %.0f s or goes back to the queue",
                name,
                grace,
            )
        elif signum == SERVER_STOPS:
            logger.info("%s: the stop already under way goes on", name)
        else:
            logger.warning("%s again: the running job goes back to the queue now", name)

    for signum in (signal.SIGTERM, signal.SIGINT, SERVER_STOPS):
        signal.signal(signum, on_signal)


def leave() -> NoReturn:
    """Leave the process now with exit 0, its log flushed, without the interpreter's
    finalisation (a thread inside torch would abort it, exit 134) and without waiting for any
    thread: a stopped worker's last step (:func:`app.cli.server.leave_now`), and what it does
    at once once its main thread handed back a job whose thread is still at work (that thread
    must write nothing more for a job that is queued again)."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
