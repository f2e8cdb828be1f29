"""Files uploaded through Gradio (``POST /gradio_api/upload``: the Data tab's import, the Train
tab's bundle), as the process records them: :class:`Uploads` (``ServingState.uploads``) holds
whose each stored file is, how large and since when, and what one user's uploads waiting for an
import may hold (:data:`app.limits.UPLOAD_BYTES_PER_USER`) and everyone's together
(:data:`app.limits.UPLOAD_BYTES_TOTAL`). An import or an opened bundle removes its file when it
ends (:meth:`Uploads.used_up`), which gives its room back; a file nobody used is removed after
:data:`app.limits.UPLOAD_KEPT_S`. The web door that bounds the upload route and fills this
record is :class:`app.perimeter.upload_gate.UploadGate`; this module is plain Python (no web
framework), so a process without the web door (the CLI, the worker) holds it for free.

The files a UI event receives are checked here too (issue 56, row 1): a Gradio event names its
files by their ``path`` on the server, and Gradio's own check of that path stands aside in an app
mounted with ``gr.mount_gradio_app``, so an event could name any file the server can read. Every
file an event carries must be an upload of the user sending it, still waiting to be used
(:meth:`Uploads.owns`, :func:`foreign_files`; the UI asks before Gradio touches the file:
:mod:`app.ui.mount`); anything else is refused with :data:`NOT_AN_UPLOAD`, which says nothing of
the file (whether it exists, what it holds).

Example:
    >>> uploads = Uploads(UploadLimits(per_user=100, total=150, request=80))
    >>> uploads.room("dana")
    (80, '')
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app import limits

# The one answer to an event naming a file that is not the sender's upload waiting to be used:
# the same whatever the file is, exists or holds.
NOT_AN_UPLOAD = (
    "That file is not an upload of yours waiting to be used (an upload is used once, and removed "
    "after an hour unused): upload it again."
)


def mib(n: int) -> str:
    """``n`` bytes as a user reads them (KiB or MiB)."""
    return f"{n / 1024 / 1024:.1f} MiB" if n >= 1024 * 1024 else f"{max(0, n) // 1024} KiB"


@dataclass(frozen=True)
class UploadLimits:
    per_user: int = limits.UPLOAD_BYTES_PER_USER
    total: int = limits.UPLOAD_BYTES_TOTAL
    request: int = limits.UPLOAD_REQUEST_BYTES
    kept_s: float = limits.UPLOAD_KEPT_S


class Uploads:
    """The uploaded files not used up yet: whose, how large, since when (thread-safe)."""

    def __init__(
        self, limits: UploadLimits | None = None, *, clock: Callable[[], float] = time.time
    ) -> None:
        self.limits = limits or UploadLimits()
        self.clock = clock
        self._files: dict[str, tuple[str, int, float]] = {}  # path -> (user, bytes, when)
        self._real: dict[str, str] = {}  # each file's path resolved -> its path as recorded
        self._streaming: Counter[str] = Counter()  # user -> bytes of uploads coming in now
        self._lock = threading.Lock()

    def _sweep(self) -> None:
        """Forget files that are gone; remove those kept past their time."""
        now = self.clock()
        for path, (_, _, when) in list(self._files.items()):
            if now - when > self.limits.kept_s:
                self._remove(path)
            elif not os.path.exists(path):
                self._forget(path)

    def _forget(self, path: str) -> None:
        self._files.pop(path, None)
        self._real = {real: kept for real, kept in self._real.items() if kept != path}

    def _remove(self, path: str) -> None:
        self._forget(path)
        file = Path(path)
        try:
            file.unlink(missing_ok=True)
            file.parent.rmdir()  # Gradio's folder per upload (named by its hash), if now empty
        except OSError:
            pass

    def room(self, user: str) -> tuple[int, str]:
        """How many bytes ``user`` may upload now, and what limits it when that is not the
        request's own limit (a message)."""
        with self._lock:
            self._sweep()
            mine = sum(n for who, n, _ in self._files.values() if who == user)
            mine += self._streaming[user]
            everyone = sum(n for _, n, _ in self._files.values()) + self._streaming.total()
        lim = self.limits
        choices = [
            (lim.request, ""),
            (
                lim.per_user - mine,
                f"your uploads waiting for an import hold {mib(mine)} of "
                f"{mib(lim.per_user)}: import them, or wait until they are removed "
                f"(after {lim.kept_s / 3600:g} h)",
            ),
            (
                lim.total - everyone,
                f"everyone's uploads waiting for an import hold {mib(everyone)} of "
                f"{mib(lim.total)}: try again once some are imported",
            ),
        ]
        return min(choices, key=lambda c: c[0])

    def streaming(self, user: str, n: int) -> None:
        """``n`` more (or, negative, fewer) bytes of ``user`` coming in now."""
        with self._lock:
            self._streaming[user] += n
            self._streaming = +self._streaming

    def add(self, user: str, paths: Iterable[str], received: int) -> None:
        """Record the files of one upload (``received``: its body's size, for a file Gradio
        has not moved into place yet)."""
        with self._lock:
            for path in paths:
                try:
                    size = os.path.getsize(path)
                except OSError:
                    size = received
                self._files[path] = (user, size, self.clock())
                self._real[os.path.realpath(path)] = path

    def owns(self, user: str, path: str) -> bool:
        """Whether ``path`` is a file ``user`` uploaded that is still waiting to be used."""
        with self._lock:
            self._sweep()
            kept = self._files.get(path)
            return kept is not None and kept[0] == user

    def uploader_of(self, real: str) -> str | None:
        """Who uploaded the file at ``real`` (a path resolved: :func:`os.path.realpath`), while
        it waits to be used; None for any other file. The one reader of an upload by its path
        (:mod:`app.perimeter.file_gate`)."""
        with self._lock:
            self._sweep()
            kept = self._files.get(self._real.get(real, ""))
            return None if kept is None else kept[0]

    def used_up(self, path: str | os.PathLike[str] | None) -> None:
        """An import or a bundle that read ``path`` has ended: remove it, if it is an upload
        recorded here (nothing else is ever removed)."""
        if path is None:
            return
        with self._lock:
            if str(path) in self._files:
                self._remove(str(path))

    def used(self) -> int:
        with self._lock:
            self._sweep()
            return sum(n for _, n, _ in self._files.values())


def foreign_files(value: Any, owned: Callable[[str], bool]) -> list[str]:
    """The files named in ``value`` (an event's inputs: every mapping with a ``path``, at any
    depth) that ``owned`` does not accept, in order.

    Example:
        >>> foreign_files(["shop", {"path": "/etc/passwd", "meta": {}}, [{"path": "/up/a.csv"}]],
        ...               owned=lambda p: p.startswith("/up/"))
        ['/etc/passwd']
    """
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            path = item.get("path")
            if path is not None and not (isinstance(path, str) and owned(path)):
                found.append(str(path))
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list | tuple):
            stack.extend(reversed(item))
    return found
