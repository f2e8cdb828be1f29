"""Sign-in attempts: held back when they fail too often, and their password checks kept off the
event loop.

- **Rate limit.** Failed attempts are counted over a sliding window (:data:`app.limits.SIGN_IN_WINDOW_S`),
  per user name and per client address, attempts still being checked counted as failures until
  known. Past either limit the next attempt is refused with :class:`TooManyAttempts` (its
  ``retry_after`` in seconds) *before* any password is checked, and the first refusal of each hold
  is reported (``on_held``: the security log). A success clears its name's count.
- **Off the loop.** The check (an argon2 verification, ~0.1-0.2 s of CPU) runs in a worker thread,
  :data:`app.limits.PASSWORD_HASHES_AT_ONCE` at a time; past :data:`app.limits.SIGN_INS_WAITING`
  waiting attempts the next is refused as busy. So a flood of wrong passwords never stalls the
  event loop that serves everyone else's predictions.

The client address comes from :data:`ADDRESS`, set per request by the sign-in form's middleware
(:class:`app.http_guard.SignInForm`): Gradio's ``auth`` callback only gets the name and password.

Example:
    >>> import asyncio
    >>> gate = SignInGate(lambda name, password: password == "right", SignInLimits(per_name=2))
    >>> async def attempts():
    ...     return [await gate.sign_in("dana", p, "10.0.0.1") for p in ("wrong", "wrong")]
    >>> asyncio.run(attempts())
    [False, False]
    >>> asyncio.run(gate.sign_in("dana", "right", "10.0.0.1"))
    Traceback (most recent call last):
    ...
    app.sign_in.TooManyAttempts: Too many failed sign-ins for this name: try again in 300 s.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import Counter, deque
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass

from app import limits

ADDRESS: ContextVar[str] = ContextVar("sign_in_address", default="")
# Keys kept before the expired ones are swept (a flood of made-up names or addresses).
_SWEEP_AT = 10_000


class TooManyAttempts(Exception):
    """Refused before checking the password: retry after ``retry_after`` seconds."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class SignInLimits:
    window_s: float = limits.SIGN_IN_WINDOW_S
    per_name: int = limits.SIGN_IN_FAILURES_PER_NAME
    per_address: int = limits.SIGN_IN_FAILURES_PER_ADDRESS
    hashes_at_once: int = limits.PASSWORD_HASHES_AT_ONCE
    waiting: int = limits.SIGN_INS_WAITING


class _Failures:
    """Failure times per key over a sliding window."""

    def __init__(self, window_s: float, limit: int) -> None:
        self.window_s, self.limit = window_s, limit
        self._times: dict[str, deque[float]] = {}

    def _recent(self, key: str, now: float) -> deque[float] | None:
        times = self._times.get(key)
        while times and times[0] <= now - self.window_s:
            times.popleft()
        if times is not None and not times:
            del self._times[key]
            return None
        return times

    def wait(self, key: str, now: float, checking: int = 0) -> int:
        """Seconds until ``key`` may try again (0: now). ``checking``: its attempts whose
        password is being checked now, counted as failures until they are known (else a burst
        of concurrent attempts would all pass the count)."""
        times = self._recent(key, now)
        failed = len(times) if times is not None else 0
        if failed + checking < self.limit:
            return 0
        if times is None or failed < self.limit:
            return 1
        return max(1, math.ceil(times[-self.limit] + self.window_s - now))

    def add(self, key: str, now: float) -> None:
        if len(self._times) >= _SWEEP_AT:
            for old in list(self._times):
                self._recent(old, now)
        self._times.setdefault(key, deque(maxlen=self.limit)).append(now)

    def clear(self, key: str) -> None:
        self._times.pop(key, None)


class SignInGate:
    """Checks sign-ins with ``verify(name, password)`` under the limits above (see the module)."""

    def __init__(
        self,
        verify: Callable[[str, str], bool],
        limits: SignInLimits | None = None,
        *,
        on_held: Callable[[str, str, str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.verify = verify
        self.limits = limits or SignInLimits()
        self.on_held = on_held  # (what was held: "name" or "address", name, address)
        self.clock = clock
        self._names = _Failures(self.limits.window_s, self.limits.per_name)
        self._addresses = _Failures(self.limits.window_s, self.limits.per_address)
        self._held: dict[tuple[str, str], float] = {}  # reported holds -> when they end
        self._slots: asyncio.Semaphore | None = None
        self._waiting = 0
        self._checking: Counter[tuple[str, str]] = Counter()  # ("name"|"address", key) -> now

    def _check(self, name: str, address: str) -> None:
        now = self.clock()
        for what, key, failures in (
            ("name", name, self._names),
            ("address", address, self._addresses),
        ):
            wait = failures.wait(key, now, self._checking[(what, key)])
            if not wait:
                continue
            if wait > 1 and self._held.get((what, key), 0.0) <= now:
                self._held = {k: end for k, end in self._held.items() if end > now}
                self._held[(what, key)] = now + wait
                if self.on_held is not None:
                    self.on_held(what, name, address)
            raise TooManyAttempts(
                f"Too many failed sign-ins for this {what}: try again in {wait} s.", wait
            )

    async def sign_in(self, name: str, password: str, address: str | None = None) -> bool:
        """True when ``verify`` accepts the name and password; TooManyAttempts when held back."""
        address = ADDRESS.get() if address is None else address
        self._check(name, address)
        if self._waiting >= self.limits.waiting:
            raise TooManyAttempts("Busy: too many sign-ins at once; try again in a moment.", 1)
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.limits.hashes_at_once)
        keys = (("name", name), ("address", address))
        self._waiting += 1
        self._checking.update(keys)
        try:
            async with self._slots:
                ok = await asyncio.to_thread(self.verify, name, password)
        finally:
            self._waiting -= 1
            self._checking.subtract(keys)
            self._checking = +self._checking  # drop the zeros
        now = self.clock()
        if ok:
            self._names.clear(name)
        else:
            self._names.add(name, now)
            self._addresses.add(address, now)
        return ok
