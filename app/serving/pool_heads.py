"""The multi-label head of a live pool whose version has none (the frozen base, before the first
retrain): fitted in the background whenever the project's train rows change.

A multi-label project decides with a head in every space. A retrain fits one on its encoder's
vectors and stores it in the version; in a space without one the same head is fitted on the
frozen vectors (:meth:`app.serving.live.LivePools.space_head`, the fit a retrain's evaluation makes
for the frozen base, so the recorded frozen metrics are those of the Predictor that serves). On
NLU++ this takes the frozen encoder from 22.6 % to 56.9 % exact match on banking, against 70.0 %
after a retrain (``bench/RESULTS.md``).

A fit takes seconds (up to 6,000 small optimiser steps), too long for the path of a label, so
:class:`HeadFitter` runs it on one background thread: a change asks for a fit, changes that
come within :data:`SETTLE_S` of each other share one, and the pool serves the head it has (or,
before its first, the k-NN decision at its calibrated threshold) until the new one is swapped in.
A project's next fit waits at least as long as its last one took, so an annotator labelling
without pause keeps the fitter busy half the time at most (one core of a shared server).

A fitted head is kept on disk beside the embedding cache (:class:`HeadStore`, keyed by the
space, the rows and the head's code, like the vectors), so a restart serves the head it had at
once instead of the k-NN fallback until a new fit lands (issue 45 row 6: 2.9 % exact match
against 48.9 % on a held-out NLU++ banking set for the first 30 s); and :meth:`HeadFitter.close`
stops a fit under way (it polls :attr:`HeadFitter.closed` each epoch) and waits for it, so a
process that ends (``intent-studio predict``) never exits with torch working on another thread
(exit 134, "terminate called without an active exception").

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
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.serving.eval_memo import digest, source_hash
from core.encoding.exit_gate import Exiting
from core.encoding.fair_share import SHARED
from core.errors import logged
from core.evaluation.data import EvalData
from core.multilabel.head import MultiLabelHead, load_head

logger = logging.getLogger(__name__)

# What a fitted head is computed by: a change to any of them fits it again.
_HEAD_CODE = ("core/multilabel/head.py", "core/multilabel/tuning.py")
KEPT = 64  # heads kept on disk (a few hundred kB each), the newest


def head_key(encoder: Any, data: EvalData) -> str | None:
    """The key of the head fitted on ``data``'s train rows in ``encoder``'s space (None when the
    encoder has no fingerprint: nothing then says two spaces are the same)."""
    fingerprint = getattr(encoder, "fingerprint", None)
    if not fingerprint:
        return None
    rows = [
        [t, list(labels)] for t, labels in zip(data.train_texts, data.train_labels, strict=True)
    ]
    return digest({"code": source_hash(_HEAD_CODE), "encoder": str(fingerprint), "rows": rows})


class HeadStore:
    """Fitted heads under ``root`` (None: none kept), one folder per key, the newest
    :data:`KEPT` kept; a folder that cannot be read is a miss, a disk that cannot be written
    only costs the next start a fit."""

    def __init__(self, root: Path | None) -> None:
        self.root = root

    def get(self, key: str | None) -> MultiLabelHead | None:
        if key is None or self.root is None or not (self.root / key).is_dir():
            return None
        try:
            return load_head(self.root / key)
        except (OSError, ValueError) as exc:
            logger.warning("kept head %s unreadable: %s", key, exc)
            return None

    def put(self, key: str | None, head: MultiLabelHead) -> None:
        if key is None or self.root is None or (self.root / key).is_dir():
            return
        tmp = self.root / f".{key}.{uuid.uuid4().hex}"
        try:
            head.save(tmp)
            os.replace(tmp, self.root / key)
            folders = sorted(
                (p for p in self.root.iterdir() if not p.name.startswith(".")),
                key=lambda p: p.stat().st_mtime,
            )
            for old in folders[:-KEPT]:
                shutil.rmtree(old, ignore_errors=True)
        except OSError as exc:  # a read-only or full disk, or another process was first
            logger.warning("could not keep a head in %s: %s", self.root, exc)
            shutil.rmtree(tmp, ignore_errors=True)


# A fit starts once no change came for this long (labels typed in a burst share one fit).
SETTLE_S = 0.5


class HeadFitter:
    """One background thread that calls ``fit(project_id)`` for the projects asked for: each
    request (re)starts the project's ``delay`` (seconds); a request during its fit runs it again
    after, no sooner than ``rest`` times the fit's own duration after its end (1: the thread
    fits at most half the time). (The app runs a second one for its pools' calibrations:
    :attr:`app.serving.state.ServingState.calibrations`.)"""

    def __init__(
        self, fit: Callable[[int], None], *, delay: float = SETTLE_S, rest: float = 1.0
    ) -> None:
        self._fit = fit
        self.delay = delay
        self.rest = rest
        self._due: dict[int, float] = {}  # project -> monotonic time its fit may start
        self._rested: dict[int, float] = {}  # project -> its last fit's end + rest x its duration
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

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called: a long fit polls it and stops."""
        return self._closed

    def close(self) -> None:
        """Stop: fits not started are dropped; a running one stops at its next poll of
        :attr:`closed` (or ends), and is waited for."""
        with self._changed:
            self._closed = True
            self._due.clear()
            self._changed.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

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
            SHARED.after_people()  # a card a person waits for goes first
            started = time.monotonic()
            try:
                self._fit(project_id)
            except Exiting:  # the process is exiting (core.encoding.exit_gate): nothing to fit
                return
            except Exception:  # one project's failed fit must not stop the others'
                logged(logger, "fitting the multi-label head of project %s failed", project_id)
            finally:
                with self._changed:
                    ended = time.monotonic()
                    self._rested[project_id] = ended + self.rest * (ended - started)
                    self._running = None
                    self._changed.notify_all()
