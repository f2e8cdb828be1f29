"""Turns on the encoder: one forward pass at a time, shared fairly between requests.

An encoder is a shared, expensive resource: on a CPU one forward pass uses every core, so two at
once only slow each other down. A request takes a *turn* for each chunk it encodes and gives the
resource back between chunks. Whoever waits next goes first in this order:

1. an *urgent* turn: a request that fits in one turn (a one-line predict, a small micro-batch);
2. the next chunk of a long request, first come first served: two long requests alternate.

So a one-line request waits for at most one chunk (the encoder sizes chunks to about
:data:`TURN_SECONDS` with :class:`ChunkCost`), never for a whole batch.

A person waiting for an answer goes before the background too: while a card is computed
(:meth:`Turns.person`, around the Label tab's key handlers) a turn that is not urgent waits for
it to be shown, and so do the background loops that do not encode (:meth:`Turns.after_people`:
the pool's calibration, the queue's scores); a card held back the background for its first
:data:`PERSON_WAIT_S` only (a first card that encodes a batch for seconds does not stop the
others' encodes, a map's among them). On two cores a background chunk beside a key took a core
and a share of the interpreter's lock from it.

Example:
    >>> turns = Turns()
    >>> with turns.turn(urgent=True):
    ...     turns.waiting()
    0
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from core.encoding.exit_gate import NATIVE

# How long one chunk of a long request should hold the encoder (seconds).
TURN_SECONDS = 0.1
# How long a person's answer holds the background back, from its start (seconds): a key's card
# takes tens of milliseconds; one that takes longer (a first card that encodes a batch) shares.
PERSON_WAIT_S = 1.0


class Turns:
    """A fair lock: urgent turns before the others, first come first served within each."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._busy = False
        self._queue: list[tuple[int, int]] = []  # (0 urgent / 1 not, ticket): a heap
        self._tickets = itertools.count()
        # per thread, when each answer a person waits for that it computes began (:meth:`person`)
        self._people: dict[int, list[float]] = {}

    @contextmanager
    def person(self) -> Iterator[None]:
        """Mark an answer a person waits for (a card after a key) while it is computed: turns
        that are not urgent and :meth:`after_people` wait for it, for its first
        :data:`PERSON_WAIT_S` at most (never the thread computing it: its own encodes go on)."""
        me = threading.get_ident()
        with self._cond:
            self._people.setdefault(me, []).append(time.monotonic())
        try:
            yield
        finally:
            with self._cond:
                self._people[me].pop()
                if not self._people[me]:
                    del self._people[me]
                self._cond.notify_all()

    def _held_until(self) -> float | None:
        """Until when another thread's person holds the background back (None: none does now);
        called with the lock held."""
        me, now = threading.get_ident(), time.monotonic()
        until = max(
            (t + PERSON_WAIT_S for who, began in self._people.items() if who != me for t in began),
            default=now,
        )
        return until if until > now else None

    def after_people(self, timeout: float = PERSON_WAIT_S) -> bool:
        """Wait while another thread's person holds the background back, up to ``timeout``
        seconds (a background step calls it before it starts); whether none did at the end."""
        end = time.monotonic() + timeout
        with self._cond:
            while (until := self._held_until()) is not None and time.monotonic() < end:
                self._cond.wait(min(until, end) - time.monotonic())
            return self._held_until() is None

    def waiting(self) -> int:
        """How many turns are waiting."""
        with self._cond:
            return len(self._queue)

    @contextmanager
    def turn(self, *, urgent: bool) -> Iterator[None]:
        """Hold the resource for one turn (blocks until it is this caller's turn)."""
        ticket = (0 if urgent else 1, next(self._tickets))
        with self._cond:
            heapq.heappush(self._queue, ticket)
            try:
                while True:
                    if self._busy or self._queue[0] != ticket:
                        self._cond.wait()
                    elif not urgent and (until := self._held_until()) is not None:
                        self._cond.wait(until - time.monotonic())
                    else:
                        break
            except BaseException:  # interrupted while waiting: leave the line, wake the next
                self._queue.remove(ticket)
                heapq.heapify(self._queue)
                self._cond.notify_all()
                raise
            heapq.heappop(self._queue)
            self._busy = True
        try:
            with NATIVE.running():  # a process's exit waits for the pass (core.encoding.exit_gate)
                yield
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()


class ChunkCost:
    """How much work fits in one turn, learnt from timed forward passes.

    A pass over work of cost ``c`` takes about ``fixed + per_unit * c`` seconds (a weighted
    least-squares line through the recent timings; older ones count less). A turn aims at
    :data:`TURN_SECONDS`, or at twice the fixed cost when that is larger: on an overloaded CPU a
    pass has a large cost of its own, and smaller chunks would only slow the batch without
    shortening anyone's wait.

    Example:
        >>> cost = ChunkCost()
        >>> for c in (100, 200, 400, 100, 800):
        ...     cost.observe(c, 0.01 + c * 0.0002)  # 10 ms fixed, 0.2 ms per unit
        >>> round(cost.budget(default=1.0))  # (0.1 - 0.01) / 0.0002
        450
    """

    def __init__(self, decay: float = 0.9) -> None:
        self.decay = decay
        self._lock = threading.Lock()
        self._sums = [0.0] * 5  # weight, c, t, c*c, c*t

    def observe(self, cost: float, seconds: float) -> None:
        with self._lock:
            for i, value in enumerate((1.0, cost, seconds, cost * cost, cost * seconds)):
                self._sums[i] = self.decay * self._sums[i] + value

    def line(self) -> tuple[float, float] | None:
        """``(fixed, per_unit)`` seconds, or None before the first timing."""
        with self._lock:
            w, c, t, cc, ct = self._sums
        if w == 0 or c <= 0:
            return None
        mean_c, mean_t = c / w, t / w
        var, cov = cc / w - mean_c**2, ct / w - mean_c * mean_t
        if var > (0.05 * mean_c) ** 2 and cov > 0:  # costs differ enough to tell fixed from unit
            per_unit = cov / var
            return max(0.0, mean_t - per_unit * mean_c), per_unit
        return 0.0, mean_t / mean_c

    def budget(self, default: float) -> float:
        """The cost that fits in one turn (``default`` before the first timing)."""
        line = self.line()
        if line is None:
            return default
        fixed, per_unit = line
        target = max(TURN_SECONDS, 2 * fixed)
        return (target - fixed) / max(per_unit, 1e-12)


# Every encoder of the process shares one line: they share the CPU (or the GPU).
SHARED = Turns()
