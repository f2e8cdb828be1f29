"""Whether someone is using the app right now, for the training worker beside it: the server
touches a file in its data directory (:meth:`Activity.touch`, at most once a second) on every
request a person or a client makes (an event of the page, a REST call), and a worker on the
same machine reads its time (:meth:`Activity.recent`) to leave them a core while they do
(:mod:`app.worker.cpu_share`); the server's middleware that touches it is :class:`InUse`. A worker on another machine finds no recent touch and keeps its
cores: it shares them with nobody.

Whether someone works on a project (the Label tab's keys and cards) is :class:`Working`'s: it
goes to the database, where the automatic retrain's watcher reads it on any machine.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> activity = Activity(Path(tempfile.mkdtemp()))
    >>> activity.recent(5.0)
    False
    >>> activity.touch(); activity.recent(5.0)
    True
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from core.errors import logged
from storage.activity import mark_active
from storage.db import ROWS, Database
from storage.errors import DatabaseUnavailable, StorageError
from storage.jobs import clock

if TYPE_CHECKING:  # the worker reads the file with no web code loaded
    from app.perimeter.http_body import Receive, Scope, Send

logger = logging.getLogger(__name__)

FILE = "activity"
# The file the server keeps fresh while its warm-up runs (:func:`warming`).
WARMING = "warming"
# A request refreshes the file's time at most this often.
EVERY_S = 1.0


class Activity:
    """The data directory's activity file (see the module); ``name``: another such file
    (:data:`WARMING`)."""

    def __init__(self, data_dir: Path, name: str = FILE) -> None:
        self.path = Path(data_dir) / name
        self._last = 0.0

    def touch(self) -> None:
        """Someone uses the app now (a file write at most once a second)."""
        now = time.monotonic()
        if now - self._last < EVERY_S:
            return
        self._last = now
        with contextlib.suppress(OSError):  # a read-only data directory: nobody is told
            self.path.touch()
            os.utime(self.path)

    def recent(self, seconds: float) -> bool:
        """Whether someone used the app in the last ``seconds``."""
        try:
            return time.time() - self.path.stat().st_mtime < seconds
        except OSError:
            return False

    def clear(self) -> None:
        """Nobody is using it from now (the file removed)."""
        with contextlib.suppress(OSError):
            self.path.unlink(missing_ok=True)


# A warming file older than this is a server that stopped (kill -9) before its warm-up ended.
WARMING_STALE_S = 10.0


def server_warming(data_dir: Path) -> bool:
    """Whether the server on this data directory is warming up now (:func:`warming`): a worker
    beside it then starts no automatic retrain and defers its own warm-up."""
    return Activity(data_dir, WARMING).recent(WARMING_STALE_S)


@contextlib.contextmanager
def warming(data_dir: Path, every: float = 2.0) -> Iterator[Activity]:
    """While the block runs (the server's warm-up: the page's first answers wait for it), keep
    the data directory's :data:`WARMING` file fresh, every ``every`` seconds; it is removed at
    the end. A worker on the same machine (:func:`server_warming`) starts no automatic retrain
    (:class:`app.services.training.auto_retrain.Watcher`) and defers its own warm-up meanwhile:
    they took the cores the first card waits for (a fresh BANKING77's first card 48-51 s after
    the page, 29-35 s held: bench/RESULTS.md).

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> with warming(folder) as file:
        ...     file.recent(WARMING_STALE_S)
        True
        >>> Activity(folder, WARMING).recent(WARMING_STALE_S)
        False
    """
    file = Activity(data_dir, WARMING)
    done = threading.Event()

    def beat() -> None:
        while True:
            file.touch()
            if done.wait(every):
                return

    file.touch()
    thread = threading.Thread(target=beat, name="warming", daemon=True)
    thread.start()
    try:
        yield file
    finally:
        done.set()
        thread.join()
        file.clear()


# Requests that are someone using the app: the page's events and REST calls (not its static
# files, nor the stream that carries an event's answer back).
_STATIC = ("/assets/", "/static/", "/favicon", "/gradio_api/file", "/gradio_api/queue/data")


class InUse:
    """ASGI middleware: touches the activity file on every request someone makes."""

    def __init__(self, app: object, activity: Activity) -> None:
        self.app, self.activity = app, activity

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        asked = scope.get("method") != "GET" or path.startswith("/api/")
        if scope["type"] == "http" and asked and not path.startswith(_STATIC):
            self.activity.touch()
        await self.app(scope, receive, send)  # type: ignore[operator]


# The Label tab's activity reaches the database at most this often per project. Under the
# shortest quiet spell (a GPU's 3 s, app.serving.compute.ComputeBudget.auto_quiet_s): the
# latest key is written before a spell counted from an earlier one could pass.
WORK_EVERY_S = 2.0


class Working:
    """Someone works on a project in the Label tab (issue 71 item 2): a key (typing an intent's
    name included), a card shown, a card asked for and not yet shown. The server tells it here
    (:meth:`touch`, :meth:`card`: in memory, no wait) and a thread of its own writes it to the
    database (:func:`storage.activity.mark_active`): at once after a pause, then at most once
    every :data:`WORK_EVERY_S` per project (the latest time, the last one included), and while a
    card is being made, the time now at that pace, so a slow card holds the spell until it
    shows and a server that stopped holds nothing. The automatic retrain's watcher, in the
    training worker (another machine in a team), counts its quiet spell from that time
    (:mod:`app.services.training.auto_retrain`). The thread ends when nothing is left to write.

    Example:
        >>> import tempfile
        >>> from storage.activity import active_at
        >>> from storage.db import Database, sqlite_url
        >>> from storage.projects import create_project
        >>> db = Database(sqlite_url(Path(tempfile.mkdtemp()) / "studio.db"))
        >>> with db.session() as s:
        ...     pid = create_project(s, "p").id
        >>> work = Working(db)
        >>> with work.card(pid):  # a card asked for: written at once (a loaded box: 60 s at most)
        ...     work.wait_written(timeout=60)
        True
        >>> with db.session() as s:
        ...     active_at(s, pid) is not None
        True
    """

    def __init__(self, db: Database, every: float = WORK_EVERY_S) -> None:
        self.db, self.every = db, every
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._seen: dict[int, float] = {}  # project -> its latest activity (monotonic)
        self._written: dict[int, float] = {}  # project -> the activity taken to be written
        self._stored: dict[int, float] = {}  # project -> the activity the database holds
        self._wrote: dict[int, float] = {}  # project -> when that was written (monotonic)
        self._cards: dict[int, int] = {}  # project -> cards asked for and not yet shown
        self._thread: threading.Thread | None = None

    def touch(self, project_id: int) -> None:
        """A key, or a card shown, now."""
        with self._lock:
            self._seen[project_id] = time.monotonic()
            self._started()

    @contextlib.contextmanager
    def card(self, project_id: int) -> Iterator[None]:
        """While the block makes a card (shown once it ends): the project is being worked on."""
        with self._lock:
            self._cards[project_id] = self._cards.get(project_id, 0) + 1
            self._seen[project_id] = time.monotonic()
            self._started()
        try:
            yield
        finally:
            with self._lock:
                if (left := self._cards[project_id] - 1) > 0:
                    self._cards[project_id] = left
                else:
                    del self._cards[project_id]
                self._seen[project_id] = time.monotonic()
                self._started()

    def wait_written(self, timeout: float = 5.0) -> bool:
        """Wait until what was told so far is in the database, committed (False: not within
        ``timeout`` s, or its write failed)."""
        with self._lock:
            told = dict(self._seen)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if all(self._stored.get(p, -1.0) >= t for p, t in told.items()):
                    return True
                if self._thread is None:  # a writer that died (_run let it go): start another
                    self._started()
            self._idle.wait(0.02)
        return False

    def _started(self) -> None:  # under the lock
        self._wake.set()
        if self._thread is None:
            self._idle.clear()
            self._thread = threading.Thread(target=self._run, name="label-activity", daemon=True)
            self._thread.start()

    def _due(self, now: float) -> tuple[dict[int, float], float | None]:
        """Under the lock: what to write now (project -> its activity), and the seconds until
        the next write (None: nothing left to write)."""
        for pid in self._cards:
            self._seen[pid] = now
        due: dict[int, float] = {}
        wait: float | None = None
        for pid, seen in self._seen.items():
            if seen <= self._written.get(pid, -1.0):
                continue
            left = self._wrote.get(pid, -self.every) + self.every - now
            if left <= 0:
                due[pid] = seen
            else:
                wait = left if wait is None else min(wait, left)
        return due, wait

    def _run(self) -> None:
        try:
            while self._step():
                pass
        except BaseException:  # a bug, logged by _write: the next touch starts a thread again
            with self._lock:
                self._thread = None
                self._idle.set()
            raise

    def _step(self) -> bool:
        """Write what is due, then wait for the next write; False once nothing is left (the
        thread ends, in the lock a touch takes to start another)."""
        with self._lock:
            self._wake.clear()
            now = time.monotonic()
            due, wait = self._due(now)
            if not due and wait is None:
                self._thread = None
                self._idle.set()
                return False
            for pid, seen in due.items():
                self._written[pid], self._wrote[pid] = seen, now
        if due:
            self._write(due)
        self._wake.wait(wait if wait is not None else 0.0)
        return True

    def _write(self, due: dict[int, float]) -> None:
        try:
            with self.db.write(ROWS) as s:
                at, now = clock(s), time.monotonic()
                for pid, seen in due.items():
                    mark_active(s, pid, at - timedelta(seconds=max(0.0, now - seen)))
            with self._lock:  # committed: what wait_written waits for
                for pid, seen in due.items():
                    self._stored[pid] = max(seen, self._stored.get(pid, -1.0))
        except (DatabaseUnavailable, StorageError) as exc:  # a busy or absent database
            logger.warning("could not record the Label tab's activity (tried again): %s", exc)
            with self._lock:  # not written: due again at the next pace (_due)
                for pid in due:
                    self._written[pid] = self._stored.get(pid, -1.0)
        except Exception:  # logged with its traceback (a bug goes on: the thread ends)
            logged(logger, "could not record the Label tab's activity")
