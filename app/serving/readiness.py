"""Whether this process can serve now: its warm-up, its stop, and the servers it depends on.

``serve`` builds every project's pool before the first request (the warm-up: the encoders
loaded, the pools and the labelling queues encoded); a request that comes meanwhile waits for
it. :class:`Readiness` says where the process is (``warming up`` with the projects done,
``ready``, ``stopping``) and what its servers answer: the database (PostgreSQL or SQLite), the
model store (a bucket, or a folder) and the training queue (Redis, or the local SQLite file).
``GET /api/v1/ready`` is 200 only when the process is warm, not stopping, and its database
answers (what a load balancer and compose's healthcheck ask: a request sent there is served
now); ``GET /api/v1/health`` says which dependency is down (503 when one is). A probe of the
servers is kept for :data:`PROBE_MAX_AGE_S`, so health polls cost one probe at a time.

A process nobody warms (a test's app, the CLI) is ready from the start: its pools are built on
first use.

Example:
    >>> r = Readiness(probe=lambda: {"database": None})
    >>> r.ready, r.state
    (True, 'ready')
    >>> r.warming(total=3); r.warmed(1)
    >>> r.ready, r.state
    (False, 'warming up: 1 of 3 projects')
    >>> r.warm(); r.ready
    True
    >>> r.stopping(); r.ready, r.state
    (False, 'stopping')
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from app.config import Settings
from core.errors import raise_if_bug
from storage.artifacts import ArtifactStore
from storage.db import Database

logger = logging.getLogger(__name__)

# How long one probe of the servers answers health polls (a poll every few seconds from each
# load balancer and container check costs one probe).
PROBE_MAX_AGE_S = 2.0
# Seconds a probe waits for Redis (the model store gives up within seconds of its own:
# storage.remote_artifacts.CONNECT_TIMEOUT_S).
QUEUE_TIMEOUT_S = 3
# The dependencies whose outage means a request cannot be served here (the queue only refuses
# retrains, which answer 503 themselves).
NEEDED = ("database",)

Probe = Callable[[], dict[str, str | None]]


def failed(what: str, exc: BaseException) -> str:
    """One line for a dependency that failed: SQLAlchemy's messages go on with the statement."""
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{what}: {type(exc).__name__}: {first}"


def queue_problem(settings: Settings, timeout: float = QUEUE_TIMEOUT_S) -> str | None:
    """Why the training queue cannot take a job now (Redis does not answer ``PING``; the local
    queue's folder is read-only); None when it can."""
    import os

    if settings.queue_url is None:
        folder = settings.queue_path.parent
        return None if os.access(folder, os.W_OK) else f"the queue's folder {folder} is read-only"
    import redis

    client = redis.Redis.from_url(
        settings.queue_url, socket_connect_timeout=timeout, socket_timeout=timeout
    )
    try:
        client.ping()
    except Exception as exc:  # the server down (or refusing us): said, not raised
        raise_if_bug(exc)
        return failed("the queue (Redis) does not answer", exc)
    finally:
        client.close()
    return None


def store_problem(store: ArtifactStore, where: object) -> str | None:
    """Why the model store cannot be used now (a bucket that does not answer, or refuses the
    listing; a folder that is read-only); None when it can."""
    try:
        store.check()
    except Exception as exc:  # the store down, or a folder that is read-only: said, not raised
        raise_if_bug(exc)
        return failed(f"the model store {where} cannot be used", exc)
    return None


def servers_probe(settings: Settings, db: Database, store: ArtifactStore) -> Probe:
    """The probe of a process's servers: each dependency's problem, None when it answers."""
    where = settings.artifacts_url or settings.artifacts_dir

    def probe() -> dict[str, str | None]:
        return {
            "database": None if db.ping() else "the database does not answer",
            "model_store": store_problem(store, where),
            "queue": queue_problem(settings),
        }

    return probe


@dataclass(frozen=True)
class Health:
    """What ``/health`` and ``/ready`` answer: the process's state and its servers'."""

    state: str
    ready: bool
    dependencies: dict[str, str | None]  # name -> None when it answers, else why not

    @property
    def down(self) -> list[str]:
        return [name for name, problem in self.dependencies.items() if problem]


class Readiness:
    """The process's state (see the module). Thread-safe: the warm-up thread writes it, the
    server's signal handler marks the stop, requests read it."""

    def __init__(self, probe: Probe) -> None:
        self._probe = probe
        self._lock = threading.Lock()
        self._probing = threading.Lock()
        self._state = "ready"
        self._done = self._total = 0
        self._probed: tuple[float, dict[str, str | None]] | None = None

    # --- the process's own state -------------------------------------------------------------

    def warming(self, total: int) -> None:
        """The warm-up started: ``total`` projects to build."""
        with self._lock:
            if self._state != "stopping":
                self._state, self._done, self._total = "warming", 0, total

    def warmed(self, done: int) -> None:
        with self._lock:
            self._done = done

    def warm(self) -> None:
        """The warm-up ended (a project that failed to warm is built on first use)."""
        with self._lock:
            if self._state != "stopping":
                self._state = "ready"

    def stopping(self) -> None:
        """The server is stopping: no new request is taken, the warm-up ends at its next step."""
        with self._lock:
            self._state = "stopping"

    @property
    def is_stopping(self) -> bool:
        with self._lock:
            return self._state == "stopping"

    @property
    def ready(self) -> bool:
        with self._lock:
            return self._state == "ready"

    @property
    def state(self) -> str:
        with self._lock:
            if self._state == "warming":
                return f"warming up: {self._done} of {self._total} projects"
            return self._state

    # --- the servers -------------------------------------------------------------------------

    def dependencies(self, max_age: float = PROBE_MAX_AGE_S) -> dict[str, str | None]:
        """Each server's problem (None: it answers), probed at most every ``max_age`` seconds:
        a caller that comes while a probe runs waits for it and reads its result."""
        with self._probing:
            probed = self._probed
            if probed is None or time.monotonic() - probed[0] > max_age:
                result = self._probe()
                before = probed[1] if probed is not None else {}
                for name, problem in result.items():  # logged when it changes, not every poll
                    if problem and not before.get(name):
                        logger.warning("%s is down: %s", name, problem)
                    elif before.get(name) and not problem:
                        logger.warning("%s answers again", name)
                self._probed = probed = (time.monotonic(), result)
            return dict(probed[1])

    def health(self) -> Health:
        """The state and every dependency; ``ready`` when warm, not stopping, and what a request
        needs (:data:`NEEDED`) answers."""
        dependencies = self.dependencies()
        ready = self.ready and not any(dependencies.get(name) for name in NEEDED)
        return Health(self.state, ready, dependencies)
