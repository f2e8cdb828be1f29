"""Whether someone is using the app right now, for the training worker beside it: the server
touches a file in its data directory (:meth:`Activity.touch`, at most once a second) on every
request a person or a client makes (an event of the page, a REST call), and a worker on the
same machine reads its time (:meth:`Activity.recent`) to leave them a core while they do
(:mod:`app.worker.cpu_share`); the server's middleware that touches it is :class:`InUse`. A worker on another machine finds no recent touch and keeps its
cores: it shares them with nobody.

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
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the worker reads the file with no web code loaded
    from app.perimeter.http_body import Receive, Scope, Send

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
    (:class:`app.services.models.auto_retrain.Watcher`) and defers its own warm-up meanwhile:
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
