"""Seconds left of a counted piece of work (training steps, utterances to encode), from timed units
of that work, never from a guess.

The rule: the first ``skip`` units are not timed (the first step carries one-off costs: memory
allocation, kernel choice, a cold tokenizer), and nothing before them is either (loading the
model, building pairs). The clock starts when they are done; the estimate is the measured time
per unit since then times the units left, and there is none ("estimating…") until
``min_updates`` reports have been timed.

Example:
    >>> ticks = iter([10.0, 11.0, 12.0])  # the first step ends at 10 s (loading before it)
    >>> eta = Eta(total=100, skip=1, min_updates=2, clock=lambda: next(ticks))
    >>> eta.update(1) is None, eta.update(2) is None, eta.update(3)
    (True, True, 97.0)
"""

from __future__ import annotations

import time
from collections.abc import Callable


class Eta:
    """Estimates the seconds left of ``total`` units from the time per unit measured so far."""

    def __init__(
        self,
        total: int,
        *,
        skip: int = 1,
        min_updates: int = 2,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if total < 0 or skip < 0 or min_updates < 1:
            raise ValueError("total and skip must be >= 0 and min_updates >= 1.")
        self.total = total
        self.skip = skip
        self.min_updates = min_updates
        self.clock = clock
        self._start: tuple[float, int] | None = None  # (time, units done) when timing began
        self._updates = 0

    def update(self, done: int) -> float | None:
        """Report ``done`` units finished; returns the seconds left, or None while estimating."""
        now = self.clock()
        if done >= self.total:
            return 0.0
        if self._start is None:
            if done >= self.skip:
                self._start = (now, done)
            return None
        t0, d0 = self._start
        if done <= d0:
            return None
        self._updates += 1
        if self._updates < self.min_updates:
            return None
        per_unit = (now - t0) / (done - d0)
        return per_unit * (self.total - done)
