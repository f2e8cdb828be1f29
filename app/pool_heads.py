"""The multi-label head of a live pool whose version has none (the frozen base, before the first
retrain): fitted in the background whenever the project's train rows change.

A multi-label project decides with a head in every space. A retrain fits one on its encoder's
vectors and stores it in the version; in a space without one the same head is fitted on the
frozen vectors (:meth:`app.context.AppContext.space_head`, the fit a retrain's evaluation makes
for the frozen base, so the recorded frozen metrics are those of the Predictor that serves). On
NLU++ this takes the frozen encoder from 22.6 % to 56.9 % exact match on banking, against 70.0 %
after a retrain (``bench/RESULTS.md``).

A fit takes seconds (up to 6,000 small optimiser steps), too long for the path of a label, so
:class:`HeadFitter` runs it on one background thread: a change asks for a fit, changes that
come within :data:`SETTLE_S` of each other share one, and the pool serves the head it has (or,
before its first, the k-NN decision at its calibrated threshold) until the new one is swapped in.
A project's next fit waits at least as long as its last one took, so an annotator labelling
without pause keeps the fitter busy half the time at most (one core of a shared server).

Example:
    >>> fitted = []
    >>> fitter = HeadFitter(fitted.append)  # waits SETTLE_S after the last change
    >>> fitter.request(7); fitter.request(7)
    >>> fitter.settle(timeout=5), fitted
    (True, [7])
    >>> fitter.close()
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

logger = logging.getLogger(__name__)

# A fit starts once no change came for this long (labels typed in a burst share one fit).
SETTLE_S = 0.5


class HeadFitter:
    """One background thread that calls ``fit(project_id)`` for the projects asked for: each
    request (re)starts the project's ``delay`` (seconds); a request during its fit runs it again
    after, no sooner than the fit's own duration after its end. (The app runs a second one for
    its pools' calibrations: :attr:`app.context.AppContext.calibrations`.)"""

    def __init__(self, fit: Callable[[int], None], *, delay: float = SETTLE_S) -> None:
        self._fit = fit
        self.delay = delay
        self._due: dict[int, float] = {}  # project -> monotonic time its fit may start
        self._rested: dict[int, float] = {}  # project -> its last fit's end plus its duration
        self._running: int | None = None
        self._closed = False
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def request(self, project_id: int) -> None:
        """Fit ``project_id``'s head once its changes settle (a no-op after :meth:`close`)."""
        with self._changed:
            if self._closed:
                return
            self._due[project_id] = time.monotonic() + self.delay
            if self._thread is None:  # started on first use: single-label apps never need it
                self._thread = threading.Thread(target=self._run, name="pool-heads", daemon=True)
                self._thread.start()
            self._changed.notify_all()

    def settle(self, timeout: float = 120.0) -> bool:
        """Wait until no fit is due or running; False when ``timeout`` seconds ran out first."""
        end = time.monotonic() + timeout
        with self._changed:
            while self._due or self._running is not None:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
        return True

    def close(self) -> None:
        """Stop: fits not started are dropped; a running one ends first."""
        with self._changed:
            self._closed = True
            self._due.clear()
            self._changed.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=30)

    def _start_at(self, project_id: int) -> float:
        """When a due fit may start: its changes settled and the project rested from its last."""
        return max(self._due[project_id], self._rested.get(project_id, 0.0))

    def _next(self) -> int | None:
        """The next project whose fit is due (None: closed). Called with the lock held."""
        while not self._closed:
            if not self._due:
                self._changed.wait()
                continue
            project_id = min(self._due, key=self._start_at)
            wait = self._start_at(project_id) - time.monotonic()
            if wait > 0:
                self._changed.wait(wait)
                continue
            del self._due[project_id]
            self._running = project_id
            return project_id
        return None

    def _run(self) -> None:
        while True:
            with self._changed:
                project_id = self._next()
            if project_id is None:
                return
            started = time.monotonic()
            try:
                self._fit(project_id)
            except Exception:  # one project's failed fit must not stop the others'
                logger.exception("fitting the multi-label head of project %s failed", project_id)
            finally:
                with self._changed:
                    ended = time.monotonic()
                    self._rested[project_id] = ended + (ended - started)
                    self._running = None
                    self._changed.notify_all()
