"""A training worker that never slows a key (issue 63 item 3): where the compute budget says
the worker shares the machine's cores with the app (:attr:`app.serving.compute.ComputeBudget.shares_cores`:
a CPU), it runs at a lower priority (``nice`` :data:`NICE`: the server's requests take a core
first whenever they want one), and while someone uses the app (a request in the last
:data:`IN_USE_S` seconds: :class:`app.perimeter.in_use.Activity`) it computes on one thread
fewer than the machine has, taking them all again once nobody does. Checked at every training
step and every chunk an evaluation encodes (:class:`app.worker.reporter.JobReporter`), so the
switch comes within a step.

Example:
    >>> share = CpuShare(None, cores=2)  # shares nothing (a GPU, or nobody to share with)
    >>> share.wanted()
    2
"""

from __future__ import annotations

import contextlib
import logging
import os

from app.perimeter.in_use import Activity
from core.encoding.threads import set_threads, threads

logger = logging.getLogger(__name__)

# The worker's priority beside the app (0 is the server's): the scheduler gives the server's
# requests the cores first, the worker what they leave.
NICE = 10
# What a worker beside the app gives up (INTENT_STUDIO_WORKER_SHARE): "threads" (the default:
# its priority, and one thread fewer while someone uses the app), "nice" (its priority only),
# "off" (neither: a machine whose app nobody uses while it trains).
ENV_SHARE = "INTENT_STUDIO_WORKER_SHARE"
SHARES = ("threads", "nice", "off")


def share_policy() -> str:
    """The deployment's :data:`ENV_SHARE` (``threads`` when unset; an unknown word is refused)."""
    value = os.environ.get(ENV_SHARE, "").strip().lower() or "threads"
    if value not in SHARES:
        raise ValueError(f"{ENV_SHARE} is one of {', '.join(SHARES)}, not {value!r}.")
    return value


# Someone used the app this recently: they may press the next key any moment.
IN_USE_S = 5.0


class CpuShare:
    """How many threads the worker computes on now (see the module); ``activity``: the app's
    activity file on this machine (None: nobody to share with)."""

    def __init__(self, activity: Activity | None, cores: int | None = None) -> None:
        self.activity = activity
        self.cores = cores or threads()
        self._now = self.cores

    def wanted(self) -> int:
        """The threads to compute on now: one fewer than the cores while someone uses the app."""
        if self.activity is not None and self.cores > 1 and self.activity.recent(IN_USE_S):
            return self.cores - 1
        return self.cores

    def adjust(self) -> None:
        """Set torch's threads to :meth:`wanted` when they changed (between two steps)."""
        wanted = self.wanted()
        if wanted == self._now:
            return
        set_threads(wanted)
        logger.info(
            "computing on %d of %d thread(s): %s",
            wanted,
            self.cores,
            "someone uses the app" if wanted < self.cores else "nobody uses the app",
        )
        self._now = wanted


def lower_priority() -> None:
    """Run this process at :data:`NICE` (once, at the worker's start)."""
    with contextlib.suppress(OSError, AttributeError):  # not POSIX, or not allowed: as it is
        if os.getpriority(os.PRIO_PROCESS, 0) < NICE:
            os.setpriority(os.PRIO_PROCESS, 0, NICE)
            logger.info("the worker runs at nice %d beside the app", NICE)
