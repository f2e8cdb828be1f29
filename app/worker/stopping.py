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

Huey's consumer, with this stop as its signal handlers, is :class:`app.worker.consumer.Consumer`
(a module of its own: a job run inline, ``intent-studio train`` without ``--queue``, loads this
one and never Huey).

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
import threading
import time

logger = logging.getLogger(__name__)

# The most a job takes from one check to the next (a training step, an evaluation's chunk, the
# int8 copy's export, the registration) plus the exit: compose's stop_grace_period is the grace
# and this (tests/app/test_compose.py checks it).
STOP_MARGIN_S = 60


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
