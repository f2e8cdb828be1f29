"""Where the per-user limits keep their counts: in this process, or in Redis, shared by every app
instance of a team (``INTENT_STUDIO_QUEUE_URL``), so that two instances behind one load balancer
hold a user to one limit, not two.

Two kinds of count, each under a key its user names (``"lines:dana"``, ``"sign-in:address:…"``):

- **windows** (a rate): the times of recent events, within a sliding window, newest
  ``keep`` at most (:meth:`LimitStore.events`, :meth:`LimitStore.add`, :meth:`LimitStore.clear`):
  the sign-in throttle's failures (:mod:`app.perimeter.sign_in`);
- **slots** (a number at once): places taken and given back (:meth:`LimitStore.take`,
  :meth:`LimitStore.give`): a user's predictions waiting or running
  (:mod:`app.serving.admission`). A slot in Redis is a lease: a process killed while holding one
  frees it after ``lease_s`` seconds at most.

:func:`open_limit_store` picks the store: :class:`MemoryLimits` without Redis (the single-user
default, or a team of one instance), :class:`RedisLimits` with it. While Redis does not answer,
:class:`RedisLimits` counts in this process instead (each instance holds its users to the limit
on its own, as without Redis) and says so once in the log; it asks Redis again a few seconds
later. A capacity of the process itself (the predictions it serves at once) is no per-user
limit: it stays in the process that it protects.

Example:
    >>> store = MemoryLimits()
    >>> store.add("fail:dana", now=100.0, window_s=60, keep=5)
    >>> store.events("fail:dana", now=130.0, window_s=60), store.events("fail:dana", 161.0, 60)
    ([100.0], [])
    >>> first, _ = store.take("lines:dana", cap=1, lease_s=60)
    >>> store.take("lines:dana", cap=1, lease_s=60)  # the one place is taken: refused, 1 held
    (None, 1)
    >>> store.give("lines:dana", first)
    >>> store.held("lines:dana")
    0
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import Counter, deque
from typing import Any, Protocol

logger = logging.getLogger(__name__)

# Keys kept before the expired windows are swept (a flood of made-up names or addresses).
SWEEP_AT = 10_000
PREFIX = "intent-studio:limits:"
RETRY_REDIS_S = 5.0  # after Redis failed, seconds of counting in-process before asking it again
REDIS_TIMEOUT_S = 0.5  # a Redis that does not answer within this costs a request no more


class LimitStore(Protocol):
    """The counts of the per-user limits (see the module)."""

    def events(self, key: str, now: float, window_s: float) -> list[float]:
        """The times of ``key``'s events within ``window_s`` seconds before ``now``, oldest
        first."""
        ...

    def add(self, key: str, now: float, window_s: float, keep: int) -> None:
        """Record an event of ``key`` at ``now`` (kept ``window_s`` seconds, the newest ``keep``)."""
        ...

    def clear(self, key: str) -> None:
        """Forget ``key``'s events."""
        ...

    def take(self, key: str, cap: int, lease_s: float) -> tuple[str | None, int]:
        """One of ``key``'s ``cap`` slots, held until :meth:`give` (or ``lease_s`` seconds at
        most): (its token, the slots held with it); (None, the slots held) when all are taken."""
        ...

    def give(self, key: str, token: str) -> None:
        """Give back the slot ``token`` of ``key``."""
        ...

    def held(self, key: str) -> int:
        """How many of ``key``'s slots are held now."""
        ...


class MemoryLimits:
    """The counts in this process (thread-safe): what a single instance needs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._windows: dict[str, tuple[float, deque[float]]] = {}  # key -> (window, times)
        self._slots: Counter[str] = Counter()

    def _recent(self, key: str, now: float, window_s: float) -> deque[float] | None:
        entry = self._windows.get(key)
        if entry is None:
            return None
        times = entry[1]
        while times and times[0] <= now - window_s:
            times.popleft()
        if not times:
            del self._windows[key]
            return None
        return times

    def events(self, key: str, now: float, window_s: float) -> list[float]:
        with self._lock:
            times = self._recent(key, now, window_s)
            return list(times) if times is not None else []

    def add(self, key: str, now: float, window_s: float, keep: int) -> None:
        with self._lock:
            if len(self._windows) >= SWEEP_AT:
                for old, (window, _) in list(self._windows.items()):
                    self._recent(old, now, window)
            entry = self._windows.get(key)
            if entry is None or entry[1].maxlen != keep:
                entry = (window_s, deque(entry[1] if entry else (), maxlen=keep))
                self._windows[key] = entry
            entry[1].append(now)

    def clear(self, key: str) -> None:
        with self._lock:
            self._windows.pop(key, None)

    def take(self, key: str, cap: int, lease_s: float) -> tuple[str | None, int]:
        with self._lock:
            held = self._slots[key]
            if held >= cap:
                return None, held
            self._slots[key] += 1
            return "m:" + uuid.uuid4().hex, held + 1

    def give(self, key: str, token: str) -> None:
        with self._lock:
            self._slots[key] -= 1
            if self._slots[key] <= 0:
                del self._slots[key]

    def held(self, key: str) -> int:
        with self._lock:
            return self._slots[key]


# A slot is a member of a sorted set scored by when its lease ends, on Redis's own clock (every
# instance reads the same one): expired leases are dropped before counting.
_TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = redis.call('ZCARD', KEYS[1])
if held >= tonumber(ARGV[1]) then return {0, held} end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2])) + 1)
return {1, held + 1}
"""
_HELD = """
local t = redis.call('TIME')
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', tonumber(t[1]) + tonumber(t[2]) / 1000000)
return redis.call('ZCARD', KEYS[1])
"""


class RedisLimits:
    """The counts in Redis, shared by every instance that names the same server (see the module);
    in this process while Redis does not answer."""

    def __init__(self, url: str, *, prefix: str = PREFIX) -> None:
        import redis

        self._errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        self.client: Any = redis.Redis.from_url(
            url, socket_timeout=REDIS_TIMEOUT_S, socket_connect_timeout=REDIS_TIMEOUT_S
        )
        self.prefix = prefix
        self.local = MemoryLimits()  # while Redis is down
        self._take = self.client.register_script(_TAKE)
        self._held = self.client.register_script(_HELD)
        self._down_until = 0.0

    def _redis(self) -> bool:
        return time.monotonic() >= self._down_until

    def _failed(self, exc: BaseException) -> None:
        if self._redis():
            logger.warning(
                "Redis does not answer (%s): per-user limits count in this process for now", exc
            )
        self._down_until = time.monotonic() + RETRY_REDIS_S

    def events(self, key: str, now: float, window_s: float) -> list[float]:
        if self._redis():
            try:
                found = self.client.zrangebyscore(
                    self.prefix + "w:" + key, f"({now - window_s}", "+inf", withscores=True
                )
                return sorted(float(score) for _, score in found)
            except self._errors as exc:
                self._failed(exc)
        return self.local.events(key, now, window_s)

    def add(self, key: str, now: float, window_s: float, keep: int) -> None:
        if self._redis():
            name = self.prefix + "w:" + key
            try:
                with self.client.pipeline(transaction=True) as pipe:
                    pipe.zadd(name, {f"{now!r}:{uuid.uuid4().hex[:8]}": now})
                    pipe.zremrangebyscore(name, "-inf", now - window_s)
                    pipe.zremrangebyrank(name, 0, -(keep + 1))
                    pipe.expire(name, max(1, int(window_s) + 1))
                    pipe.execute()
                return
            except self._errors as exc:
                self._failed(exc)
        self.local.add(key, now, window_s, keep)

    def clear(self, key: str) -> None:
        self.local.clear(key)
        if self._redis():
            try:
                self.client.delete(self.prefix + "w:" + key)
            except self._errors as exc:
                self._failed(exc)

    def take(self, key: str, cap: int, lease_s: float) -> tuple[str | None, int]:
        if self._redis():
            token = "r:" + uuid.uuid4().hex
            try:
                ok, held = self._take(keys=[self.prefix + "s:" + key], args=[cap, lease_s, token])
                return (token if ok else None), int(held)
            except self._errors as exc:
                self._failed(exc)
        return self.local.take(key, cap, lease_s)

    def give(self, key: str, token: str) -> None:
        if token.startswith("m:"):
            self.local.give(key, token)
            return
        try:  # even while marked down: a lease not given back ends by itself
            self.client.zrem(self.prefix + "s:" + key, token)
        except self._errors as exc:
            self._failed(exc)

    def held(self, key: str) -> int:
        if self._redis():
            try:
                return int(self._held(keys=[self.prefix + "s:" + key])) + self.local.held(key)
            except self._errors as exc:
                self._failed(exc)
        return self.local.held(key)


def open_limit_store(redis_url: str | None) -> LimitStore:
    """Redis's shared counts when a team names a Redis server (its queue's URL), else this
    process's."""
    return RedisLimits(redis_url) if redis_url else MemoryLimits()
