"""Sign-in attempts: slowed down when they fail too often, never locked, and their password checks
kept off the event loop, a spray's last.

- **Delays, per name and address.** Failed attempts are counted over a sliding window
  (:data:`app.limits.SIGN_IN_WINDOW_S`) for three keys: the name *from this address*, the
  address (whatever the names), and the name from addresses where it never signed in. Past a
  key's limit its next attempt waits 1 s after the last failure, then 2, 4, ... up to
  :data:`app.limits.SIGN_IN_MAX_DELAY_S` (:class:`TooManyAttempts`, with ``retry_after``), before
  any password is checked; attempts still being checked count as failures until known. So an
  attacker holds back only their own guesses: their address for that name, or, guessing a name
  from many addresses, that name's attempts from addresses where it never signed in, by a minute
  at most. An address where the name signed in before (within
  :data:`app.limits.SIGN_IN_KNOWN_ADDRESS_S`, remembered by this process) is held back only by
  its own failures for that name. A success clears the failures of its name at its address.
  The first refusal of each hold is reported (``on_held``: the security log). The failures are
  counted in the store the gate is given (:mod:`app.limit_store`): Redis for a team, so a second
  app instance does not double them; attempts in flight and known addresses are this process's.
- **Off the loop, a spray last.** The check (an argon2 verification, ~0.1-0.2 s of CPU) runs in a
  worker thread, :data:`app.limits.PASSWORD_HASHES_AT_ONCE` at a time. Attempts waiting for it go
  in order of how much their address failed recently (its failures and attempts in flight; an
  address the name signed in from first): past :data:`app.limits.SIGN_INS_WAITING` waiting, the
  one that ranks last is refused as busy. A password spray from many addresses fills the queue
  with addresses that have failed, so a sign-in from an address that has not goes first: the
  spray slows the sprayer, not the people signing in.

The client address comes from :data:`ADDRESS`, set per request by the sign-in form's middleware
(:class:`app.perimeter.http_guard.SignInForm`): Gradio's ``auth`` callback only gets the name and password.

Example:
    >>> import asyncio
    >>> gate = SignInGate(lambda n, p: p == "right", SignInLimits(per_name_and_address=2))
    >>> async def attempts():
    ...     return [await gate.sign_in("dana", p, "10.0.0.1") for p in ("wrong", "wrong")]
    >>> asyncio.run(attempts())
    [False, False]
    >>> asyncio.run(gate.sign_in("dana", "right", "10.0.0.1"))
    Traceback (most recent call last):
    ...
    app.perimeter.sign_in.TooManyAttempts: Too many failed sign-ins for this name from this address: try again in 1 s.
    >>> asyncio.run(gate.sign_in("dana", "right", "10.0.0.2"))  # elsewhere: not held
    True
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import json
import math
import time
from collections import Counter
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass

from app import limits
from app.limit_store import LimitStore, MemoryLimits

ADDRESS: ContextVar[str] = ContextVar("sign_in_address", default="")
# Keys kept before the expired ones are swept (a flood of made-up names or addresses).
_SWEEP_AT = 10_000
# Addresses remembered per name where it signed in (the most recent).
_KNOWN_PER_NAME = 16
BUSY = "Busy: too many sign-ins at once; try again in a moment."


class TooManyAttempts(Exception):
    """Refused before checking the password: retry after ``retry_after`` seconds."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class SignInLimits:
    window_s: float = limits.SIGN_IN_WINDOW_S
    per_name_and_address: int = limits.SIGN_IN_FAILURES_PER_NAME_AND_ADDRESS
    per_address: int = limits.SIGN_IN_FAILURES_PER_ADDRESS
    per_name: int = limits.SIGN_IN_FAILURES_PER_NAME  # from addresses it never signed in from
    max_delay_s: float = limits.SIGN_IN_MAX_DELAY_S
    known_for_s: float = limits.SIGN_IN_KNOWN_ADDRESS_S
    hashes_at_once: int = limits.PASSWORD_HASHES_AT_ONCE
    waiting: int = limits.SIGN_INS_WAITING


class _Failures:
    """Failure times per key over a sliding window; past ``limit`` a delay after the last. The
    times live in ``store`` (:mod:`app.limit_store`: Redis for a team, so every app instance
    counts the same failures), under ``kind``."""

    def __init__(
        self, window_s: float, limit: int, max_delay_s: float, store: LimitStore, kind: str
    ) -> None:
        self.window_s, self.limit, self.max_delay_s = window_s, limit, max_delay_s
        # enough failures past the limit for the longest delay
        self._keep = limit + max(1, math.ceil(math.log2(max(max_delay_s, 1.0))) + 1)
        self.store, self.kind = store, kind

    def _key(self, key: object) -> str:
        return f"sign-in:{self.kind}:{json.dumps(key)}"

    def _recent(self, key: object, now: float) -> list[float] | None:
        return self.store.events(self._key(key), now, self.window_s) or None

    def count(self, key: object, now: float) -> int:
        times = self._recent(key, now)
        return len(times) if times is not None else 0

    def wait(self, key: object, now: float, checking: int = 0) -> int:
        """Seconds until ``key`` may try again (0: now). ``checking``: its attempts whose
        password is being checked now, counted as failures until they are known (else a burst
        of concurrent attempts would all pass the count); past the limit, one at a time."""
        times = self._recent(key, now)
        failed = len(times) if times is not None else 0
        if failed + checking < self.limit:
            return 0
        if times is None or failed < self.limit or checking:
            return 1
        delay = min(self.max_delay_s, 2.0 ** (failed - self.limit))
        return max(0, math.ceil(times[-1] + delay - now))

    def add(self, key: object, now: float) -> None:
        self.store.add(self._key(key), now, self.window_s, self._keep)

    def clear(self, key: object) -> None:
        self.store.clear(self._key(key))


class _Queue:
    """Slots for password checks, ``at_once`` at a time; at most ``waiting`` wait, lowest rank
    first (then first come); past it the one that ranks last is refused as busy."""

    def __init__(self, at_once: int, waiting: int) -> None:
        self.at_once, self.waiting = at_once, waiting
        self.running = 0
        self._heap: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def __len__(self) -> int:
        return self.running + len(self._heap)

    async def acquire(self, rank: float) -> None:
        if self.running < self.at_once and not self._heap:
            self.running += 1
            return
        if len(self._heap) >= self.waiting:
            last = max(self._heap)
            if rank >= last[0]:
                raise TooManyAttempts(BUSY, 1)
            self._heap.remove(last)
            heapq.heapify(self._heap)
            last[2].set_exception(TooManyAttempts(BUSY, 1))
        entry = (rank, next(self._order), asyncio.get_running_loop().create_future())
        heapq.heappush(self._heap, entry)
        try:
            await entry[2]  # resolved when a slot is handed over (or refused: raises)
        except asyncio.CancelledError:
            if entry in self._heap:
                self._heap.remove(entry)
                heapq.heapify(self._heap)
            elif entry[2].done() and not entry[2].cancelled() and entry[2].exception() is None:
                self.release()  # handed a slot it will not use
            raise

    def release(self) -> None:
        while self._heap:
            _, _, future = heapq.heappop(self._heap)
            if not future.done():
                future.set_result(None)  # the slot goes on to the best waiting
                return
        self.running -= 1


class SignInGate:
    """Checks sign-ins with ``verify(name, password)`` under the limits above (see the module)."""

    def __init__(
        self,
        verify: Callable[[str, str], bool],
        limits: SignInLimits | None = None,
        *,
        on_held: Callable[[str, str, str], None] | None = None,
        clock: Callable[[], float] = time.time,
        store: LimitStore | None = None,
    ) -> None:
        self.verify = verify
        self.limits = lim = limits or SignInLimits()
        self.on_held = on_held  # (what was held: "name and address", "address", "name", ...)
        self.clock = clock  # the wall clock: failures counted in Redis are compared across hosts
        store = store if store is not None else MemoryLimits()
        self._pairs = _Failures(
            lim.window_s, lim.per_name_and_address, lim.max_delay_s, store, "pair"
        )
        self._addresses = _Failures(
            lim.window_s, lim.per_address, lim.max_delay_s, store, "address"
        )
        self._names = _Failures(lim.window_s, lim.per_name, lim.max_delay_s, store, "name")
        self._known: dict[str, dict[str, float]] = {}  # name -> address -> when it signed in
        self._held: dict[tuple[str, object], float] = {}  # reported holds -> when they end
        self._queue: _Queue | None = None
        self._checking: Counter[tuple[str, object]] = Counter()  # (kind, key) -> in flight

    def known(self, name: str, address: str, now: float) -> bool:
        """Whether ``name`` signed in from ``address`` recently (this process remembers)."""
        at = self._known.get(name, {}).get(address)
        return at is not None and now - at < self.limits.known_for_s

    def _remember(self, name: str, address: str, now: float) -> None:
        if len(self._known) >= _SWEEP_AT:
            self._known = {
                n: seen
                for n, seen in self._known.items()
                if any(now - at < self.limits.known_for_s for at in seen.values())
            }
        seen = self._known.setdefault(name, {})
        seen.pop(address, None)
        seen[address] = now
        while len(seen) > _KNOWN_PER_NAME:
            del seen[next(iter(seen))]

    def _checks(self, name: str, address: str, known: bool) -> list[tuple[str, object, _Failures]]:
        checks: list[tuple[str, object, _Failures]] = [
            ("name from this address", (name, address), self._pairs)
        ]
        if not known:
            checks += [("address", address, self._addresses), ("name", name, self._names)]
        return checks

    def _check(self, name: str, address: str, known: bool, now: float) -> None:
        for what, key, failures in self._checks(name, address, known):
            wait = failures.wait(key, now, self._checking[(what, key)])
            if not wait:
                continue
            held = failures.count(key, now) >= failures.limit  # not only attempts in flight
            if held and self._held.get((what, key), 0.0) <= now:
                self._held = {k: end for k, end in self._held.items() if end > now}
                self._held[(what, key)] = now + wait
                if self.on_held is not None:
                    self.on_held(what, name, address)
            raise TooManyAttempts(
                f"Too many failed sign-ins for this {what}: try again in {wait} s.", wait
            )

    def _rank(self, address: str, known: bool, now: float) -> float:
        """An attempt's place among those waiting: its address's recent failures and attempts
        in flight (an address the name signed in from: first)."""
        if known:
            return -1.0
        return float(self._addresses.count(address, now) + self._checking[("address", address)])

    async def sign_in(self, name: str, password: str, address: str | None = None) -> bool:
        """True when ``verify`` accepts the name and password; TooManyAttempts when held back."""
        address = ADDRESS.get() if address is None else address
        now = self.clock()
        known = self.known(name, address, now)
        self._check(name, address, known, now)
        if self._queue is None:
            self._queue = _Queue(self.limits.hashes_at_once, self.limits.waiting)
        keys = [(what, key) for what, key, _ in self._checks(name, address, False)]
        rank = self._rank(address, known, now)
        self._checking.update(keys)
        try:
            await self._queue.acquire(rank)
            try:
                ok = await asyncio.to_thread(self.verify, name, password)
            finally:
                self._queue.release()
        finally:
            self._checking.subtract(keys)
            self._checking = +self._checking  # drop the zeros
        now = self.clock()
        if ok:
            self._pairs.clear((name, address))
            self._remember(name, address, now)
        else:
            for _, key, failures in self._checks(name, address, False):
                failures.add(key, now)
        return ok
