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
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the worker reads the file with no web code loaded
    from app.perimeter.http_body import Receive, Scope, Send

FILE = "activity"
# A request refreshes the file's time at most this often.
EVERY_S = 1.0


class Activity:
    """The data directory's activity file (see the module)."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / FILE
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
