"""Sign-in attempts: slowed down when they fail too often, never locked, and their password checks
kept off the event loop, a spray's last.

- **Delays, per name and address.** Failed attempts are counted over a sliding window
  (:data:`app.limits.SIGN_IN_WINDOW_S`) for three keys: the name *from this address*, the
  address (whatever the names), and the name from addresses where it never signed in. Past the
  limit of either of the first two, the key's next attempt waits 1 s after the last failure,
  then 2, 4, ... up to :data:`app.limits.SIGN_IN_MAX_DELAY_S` (:class:`TooManyAttempts`, with
  ``retry_after``), before any password is checked; attempts still being checked count as
  failures until known. So an attacker holds back only their own guesses: their address, or
  their address for that name.
- **A name under attack still lets its owner in** (issue 56, row 2). Past the third limit (the
  name guessed from many addresses) its attempts from addresses where it never signed in are
  not refused: they wait in the name's own line and are checked one at a time, each wrong
  guess holding the line :data:`app.limits.SIGN_IN_NAME_PAUSE_S` before the next (at most
  :data:`app.limits.SIGN_IN_NAME_WAITING` wait, those from addresses that tried least first),
  and each address may guess the name once per :data:`app.limits.SIGN_IN_MAX_DELAY_S` while
  it lasts. The owner, from any address, gets in within seconds; an attacker pays for every
  guess: a pause of the name's line (however many addresses they have) and a minute of the
  address. An address where the name signed in before
  (within :data:`app.limits.SIGN_IN_KNOWN_ADDRESS_S`; the app reads them back from the security
  log when it starts) skips the line and the address limit. A success clears the failures of
  its name at its address. The first refusal or line of each hold is reported (``on_held``:
  the security log).
- **Off the loop, a spray last.** The check (an argon2 verification, ~0.1-0.2 s of CPU) runs in a
  worker thread, :data:`app.limits.PASSWORD_HASHES_AT_ONCE` at a time. Attempts waiting for it go
  in order of how much their address *tried* recently (every attempt counts, those refused as
  busy too, and those in flight; an address the name signed in from first): past
  :data:`app.limits.SIGN_INS_WAITING` waiting, the one that ranks last is refused as busy. A
  spray fills the queue with addresses that keep trying, so a sign-in from one that has not goes
  first (issue 56, row 5: counting only failures, a spray refused as busy never failed, and
  ranked with the people signing in).

What the limits count (failures, attempts, known addresses) lives in the store the gate is given
(:mod:`app.limits.store`: this process's memory, or Redis for a team, so a second app instance
does not double the limits); attempts in flight and the lines waiting for a check are this
process's own. Addresses are counted by
their IPv4 address or IPv6 /64 (:func:`address_key`). The client address comes from
:data:`ADDRESS`, set per request by the sign-in form's middleware
(:class:`app.perimeter.http_guard.SignInForm`): Gradio's ``auth`` callback only gets the name and
password.

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
import ipaddress
import itertools
import math
import time
from collections import Counter
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass

from app import limits
from app.limits.store import LimitStore, MemoryLimits

ADDRESS: ContextVar[str] = ContextVar("sign_in_address", default="")
BUSY = "Busy: too many sign-ins at once; try again in a moment."
NAME_BUSY = (
    "Sign-ins for this name are being checked one at a time (many wrong passwords from "
    "elsewhere): try again in a few seconds."
)
_TRIES_KEPT = 64  # an address's recent attempts counted for its rank, at most
_KNOWN = "sign-in:known"


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
    name_pause_s: float = limits.SIGN_IN_NAME_PAUSE_S
    name_waiting: int = limits.SIGN_IN_NAME_WAITING


def address_key(address: str) -> str:
    """How an address is counted: an IPv4 address as it is, an IPv6 one by its /64 (one host's
    share), an IPv4-mapped IPv6 address as its IPv4 address; anything else as it is.

    Example:
        >>> address_key("2001:db8::1"), address_key("::ffff:10.0.0.1"), address_key("10.0.0.1")
        ('2001:db8::/64', '10.0.0.1', '10.0.0.1')
    """
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network(f"{ip}/64", strict=False))
    return str(ip)


class _Failures:
    """Failure times per key over a sliding window, kept in a :class:`LimitStore` under
    ``prefix``; past ``limit`` a delay after the last."""

    def __init__(self, store: LimitStore, prefix: str, lim: SignInLimits, limit: int) -> None:
        self.store, self.prefix, self.limit = store, prefix, limit
        self.window_s, self.max_delay_s = lim.window_s, lim.max_delay_s
        # enough failures past the limit for the longest delay
        self._keep = limit + max(1, math.ceil(math.log2(max(lim.max_delay_s, 1.0))) + 1)

    def recent(self, key: str, now: float) -> list[float]:
        return self.store.events(f"{self.prefix}:{key}", now, self.window_s)

    def count(self, key: str, now: float) -> int:
        return len(self.recent(key, now))

    def wait(self, key: str, now: float, checking: int = 0) -> int:
        """Seconds until ``key`` may try again (0: now). ``checking``: its attempts whose
        password is being checked now, counted as failures until they are known (else a burst
        of concurrent attempts would all pass the count); past the limit, one at a time."""
        times = self.recent(key, now)
        if len(times) + checking < self.limit:
            return 0
        if len(times) < self.limit or checking:
            return 1
        delay = min(self.max_delay_s, 2.0 ** (len(times) - self.limit))
        return max(0, math.ceil(times[-1] + delay - now))

    def add(self, key: str, now: float) -> None:
        self.store.add(f"{self.prefix}:{key}", now, self.window_s, self._keep)

    def clear(self, key: str) -> None:
        self.store.clear(f"{self.prefix}:{key}")


class _Queue:
    """Slots, ``at_once`` at a time; at most ``waiting`` wait, the one whose ``rank()`` is
    lowest *now* first (then first come: an address that kept trying while it waited falls
    back); past it the one that ranks last is refused with ``busy``."""

    def __init__(self, at_once: int, waiting: int, busy: str = BUSY) -> None:
        self.at_once, self.waiting, self.busy = at_once, waiting, busy
        self.running = 0
        self._waiting: list[tuple[Callable[[], float], int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def __len__(self) -> int:
        return self.running + len(self._waiting)

    def _ranked(self) -> list[tuple[float, int, int]]:
        """(rank now, order, index) of each waiting attempt, best first."""
        return sorted((rank(), order, i) for i, (rank, order, _) in enumerate(self._waiting))

    async def acquire(self, rank: Callable[[], float]) -> None:
        if self.running < self.at_once and not self._waiting:
            self.running += 1
            return
        if len(self._waiting) >= self.waiting:
            worst, _, index = self._ranked()[-1]
            if rank() >= worst:
                raise TooManyAttempts(self.busy, 1)
            self._waiting.pop(index)[2].set_exception(TooManyAttempts(self.busy, 1))
        entry = (rank, next(self._order), asyncio.get_running_loop().create_future())
        self._waiting.append(entry)
        try:
            await entry[2]  # resolved when a slot is handed over (or refused: raises)
        except asyncio.CancelledError:
            if entry in self._waiting:
                self._waiting.remove(entry)
            elif entry[2].done() and not entry[2].cancelled() and entry[2].exception() is None:
                self.release()  # handed a slot it will not use
            raise

    def release(self) -> None:
        for _, _, index in self._ranked():
            future = self._waiting[index][2]
            if not future.done():
                del self._waiting[index]
                future.set_result(None)  # the slot goes on to the best waiting
                return
        self._waiting = [e for e in self._waiting if not e[2].done()]
        self.running -= 1


class SignInGate:
    """Checks sign-ins with ``verify(name, password)`` under the limits above (see the module).
    ``store``: where the counts live (:mod:`app.limits.store`; this process's memory by
    default); ``clock``: wall time (the store's times mean the same in every process)."""

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
        self.on_held = on_held  # (what was held: "name from this address", "address", "name")
        self.clock = clock
        self.store = store if store is not None else MemoryLimits()
        self._pairs = _Failures(self.store, "sign-in:pair", lim, lim.per_name_and_address)
        self._addresses = _Failures(self.store, "sign-in:address", lim, lim.per_address)
        self._names = _Failures(self.store, "sign-in:name", lim, lim.per_name)
        self._held: dict[tuple[str, str], float] = {}  # reported holds -> when they end
        self._queue: _Queue | None = None
        self._lines: dict[str, _Queue] = {}  # a name under attack -> its line
        self._checking: Counter[tuple[str, str]] = Counter()  # (kind, key) -> in flight

    def known(self, name: str, address: str, now: float) -> bool:
        """Whether ``name`` signed in from ``address`` within the known-address time."""
        key = f"{_KNOWN}:{name}\n{address_key(address)}"
        return bool(self.store.events(key, now, self.limits.known_for_s))

    def remember(self, name: str, address: str, at: float) -> None:
        """``name`` signed in from ``address`` at ``at`` (also how the app reads back the
        sign-ins of the security log when it starts)."""
        key = f"{_KNOWN}:{name}\n{address_key(address)}"
        self.store.add(key, at, self.limits.known_for_s, 1)

    def _report(self, what: str, key: str, name: str, address: str, now: float, end: float) -> None:
        if self._held.get((what, key), 0.0) > now:
            return
        self._held = {k: until for k, until in self._held.items() if until > now}
        self._held[(what, key)] = end
        if self.on_held is not None:
            self.on_held(what, name, address)

    def _check(self, name: str, address: str, known: bool, now: float) -> bool:
        """Refuse an attempt held back by its address or its name at its address (raises);
        True when the name is under attack and the attempt takes the name's line."""
        checks = [("name from this address", f"{name}\n{address}", self._pairs)]
        if not known:
            checks.append(("address", address, self._addresses))
        for what, key, failures in checks:
            wait = failures.wait(key, now, self._checking[(what, key)])
            if not wait:
                continue
            if failures.count(key, now) >= failures.limit:  # not only attempts in flight
                self._report(what, key, name, address, now, now + wait)
            raise TooManyAttempts(
                f"Too many failed sign-ins for this {what}: try again in {wait} s.", wait
            )
        if known or not self._names.wait(name, now, self._checking[("name", name)]):
            return False
        if self._names.count(name, now) >= self._names.limit:
            self._report("name", name, name, address, now, now + self.limits.window_s)
        # under attack, an address guesses the name once a cooldown at most
        last = self._pairs.recent(f"{name}\n{address}", now)[-1:]
        wait = math.ceil(last[0] + self.limits.max_delay_s - now) if last else 0
        if wait > 0:
            raise TooManyAttempts(
                f"Too many failed sign-ins for this name: try again in {wait} s.", wait
            )
        return True

    def _rank(self, address: str, known: bool) -> Callable[[], float]:
        """An attempt's place among those waiting, asked again whenever a slot frees: how much
        its address tried recently (an address the name signed in from: first)."""
        if known:
            return lambda: -1.0
        return lambda: len(
            self.store.events(f"sign-in:tries:{address}", self.clock(), self.limits.window_s)
        )

    def _line(self, name: str) -> _Queue:
        line = self._lines.get(name)
        if line is None:
            line = self._lines[name] = _Queue(1, self.limits.name_waiting, NAME_BUSY)
        return line

    async def sign_in(self, name: str, password: str, address: str | None = None) -> bool:
        """True when ``verify`` accepts the name and password; TooManyAttempts when held back."""
        address = address_key(ADDRESS.get() if address is None else address)
        now = self.clock()
        known = self.known(name, address, now)
        rank = self._rank(address, known)
        self.store.add(f"sign-in:tries:{address}", now, self.limits.window_s, _TRIES_KEPT)
        line = self._line(name) if self._check(name, address, known, now) else None
        if self._queue is None:
            self._queue = _Queue(self.limits.hashes_at_once, self.limits.waiting)
        keys = [("name from this address", f"{name}\n{address}"), ("address", address)]
        keys += [("name", name)] if not known else []
        self._checking.update(keys)
        try:
            if line is not None:
                await line.acquire(rank)
            try:
                ok = await self._verify(name, password, rank)
                if not ok and line is not None:
                    await asyncio.sleep(self.limits.name_pause_s)  # the guess's price
            finally:
                if line is not None:
                    line.release()
                    if not len(line):
                        self._lines.pop(name, None)
        finally:
            self._checking.subtract(keys)
            self._checking = +self._checking  # drop the zeros
        if ok:
            self._pairs.clear(f"{name}\n{address}")
            self.remember(name, address, self.clock())
        else:
            self._record_failure(name, address, known)
        return ok

    async def _verify(self, name: str, password: str, rank: Callable[[], float]) -> bool:
        assert self._queue is not None
        await self._queue.acquire(rank)
        try:
            return await asyncio.to_thread(self.verify, name, password)
        finally:
            self._queue.release()

    def _record_failure(self, name: str, address: str, known: bool) -> None:
        now = self.clock()
        self._pairs.add(f"{name}\n{address}", now)
        self._addresses.add(address, now)
        if not known:
            self._names.add(name, now)
