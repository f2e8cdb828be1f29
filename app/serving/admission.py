"""Who may start a prediction now: the limits that keep one user's batches from stalling everyone.

- **Per call**: a viewer sends at most 200 utterances per call, a designer or admin 1,000; every
  utterance at most :data:`storage.utterances.MAX_TEXT_CHARS` characters (the importer's limit).
- **Per user**: at most 2 batch calls (more than one utterance) at once; a third is refused.
- **Queue**: at most 4,000 utterances of batch calls admitted at once, all users together; one-line
  calls have their own lane (64 at once), so batches can never fill it.
- **One-liners per user**: at most :data:`app.limits.LINES_PER_USER` one-line calls of one user
  waiting or running at once (:meth:`Admission.line`; the API holds its place from arrival to
  answer, while the request waits for its micro-batch), so one token's flood of one-liners is
  refused instead of queueing ahead of everyone.

The per-user limits (batch calls, one-liners) are counted in the :class:`app.limits.store.LimitStore`
the process is given: Redis for a team, so a user sending to two app instances still has one
share; the queue's limits are the process's own capacity and stay in it.

A refusal is a :class:`BusyError` saying to retry in a moment; nothing waits without bound. Once
admitted, calls share the encoder in turns (:mod:`core.encoding.fair_share`), so a one-line call goes
before the next chunk of a batch. The limits hold for every caller (UI, API, CLI): the prediction
service enters :meth:`Admission.admit` itself.

Example:
    >>> gate = Admission(Limits(batches_per_user=1))
    >>> with gate.admit("dana", 10):
    ...     gate.admit("dana", 10).__enter__()
    Traceback (most recent call last):
    ...
    app.serving.admission.BusyError: Busy: dana already has 1 batch prediction running; retry when it has finished.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

from app.limits import LINES_PER_USER
from app.limits.store import LimitStore, MemoryLimits
from storage.utterances import MAX_TEXT_CHARS


class BusyError(RuntimeError):
    """The server (or this user's share of it) is busy: nothing was done, retry in a moment."""


def _per_role() -> dict[str, int]:
    return {"viewer": 200, "designer": 1000, "admin": 1000}


@dataclass(frozen=True)
class Limits:
    texts_per_call: Mapping[str, int] = field(default_factory=_per_role)
    chars_per_text: int = MAX_TEXT_CHARS
    batches_per_user: int = 2
    queued_texts: int = 4000
    lines_at_once: int = 64
    lines_per_user: int = LINES_PER_USER
    # a user's place held by a process killed meanwhile (shared counts) frees itself after this
    lease_s: float = 300.0

    def check_call(self, role: str, texts: list[str]) -> None:
        """ValueError when ``texts`` is more than ``role`` may send in one call."""
        cap = self.texts_per_call[role]
        if len(texts) > cap:
            raise ValueError(
                f"At most {cap:,} utterances per call for a {role} (this call has "
                f"{len(texts):,}): split them into smaller calls."
            )
        if any(len(t) > self.chars_per_text for t in texts):
            raise ValueError(f"An utterance is longer than {self.chars_per_text} characters.")


class Admission:
    """Counts the prediction calls running now and refuses what would go past :class:`Limits`;
    the per-user counts in ``store`` (default: this process's)."""

    def __init__(self, limits: Limits | None = None, store: LimitStore | None = None) -> None:
        self.limits = limits or Limits()
        self.store: LimitStore = store if store is not None else MemoryLimits()
        self._lock = threading.Lock()
        self._queued = 0  # utterances of the batch calls running
        self._lines = 0  # one-line calls running

    @property
    def queued(self) -> int:
        """Utterances of the batch calls admitted now."""
        with self._lock:
            return self._queued

    def lines_of(self, user: str) -> int:
        """One-line calls of ``user`` waiting or running now (in every instance sharing the
        store)."""
        return self.store.held(f"lines:{user}")

    @contextmanager
    def line(self, user: str) -> Iterator[None]:
        """Hold one of ``user``'s places for one-line calls (at most ``lines_per_user``), or raise
        :class:`BusyError` at once."""
        key = f"lines:{user}"
        token, held = self.store.take(key, self.limits.lines_per_user, self.limits.lease_s)
        if token is None:
            raise BusyError(
                f"Busy: {user} already has {held} predictions waiting; retry when one has "
                "been answered."
            )
        try:
            yield
        finally:
            self.store.give(key, token)

    def _batch(self, user: str) -> str:
        """One of ``user``'s places for batch calls, or :class:`BusyError`: its token."""
        token, running = self.store.take(
            f"batches:{user}", self.limits.batches_per_user, self.limits.lease_s
        )
        if token is None:
            plural = "s" if running > 1 else ""
            ends = "one has" if running > 1 else "it has"
            raise BusyError(
                f"Busy: {user} already has {running} batch prediction{plural} running; "
                f"retry when {ends} finished."
            )
        return token

    @contextmanager
    def admit(self, user: str, texts: int, *, lines: bool = False) -> Iterator[None]:
        """Run the block as ``user``'s call of ``texts`` utterances, or raise :class:`BusyError`
        at once. ``lines=True``: the call is many one-line requests served together (the API's
        micro-batch), in the one-line lane. A one-line call of one user also holds one of their
        places (:meth:`line`)."""
        if texts <= 1 and not lines:
            with self.line(user), self.admit(user, texts, lines=True):
                yield
            return
        one_line = lines or texts <= 1
        token = None if one_line else self._batch(user)
        try:
            with self._lock:
                if one_line:
                    if self._lines >= self.limits.lines_at_once:
                        raise BusyError("Busy: too many predictions at once; retry in a moment.")
                    self._lines += 1
                else:
                    if self._queued + texts > self.limits.queued_texts:
                        raise BusyError(
                            "Busy: the server is working through other users' batches; "
                            "retry in a moment."
                        )
                    self._queued += texts
            try:
                yield
            finally:
                with self._lock:
                    if one_line:
                        self._lines -= 1
                    else:
                        self._queued -= texts
        finally:
            if token is not None:
                self.store.give(f"batches:{user}", token)
