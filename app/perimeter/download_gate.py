"""Downloads (reports, bundles, exports) served only to someone who may read their project now
(issue 56, row 10).

Gradio hands a file out by its path (``/gradio_api/file=<path>``) to any signed-in session that
knows the URL, and used to keep a copy of each in its cache for a day: a member removed from a
project could still fetch the project's report, and the copies sat outside the downloads' cap
(28 MB in 70 s by one designer). The app now serves downloads straight from
``<data-dir>/downloads`` (:mod:`app.services.projects.downloads`; no copies), and
:class:`DownloadGate` sits in front of Gradio's file routes: a path under that folder is served
only when ``may_read(user, project)`` says the session's user may read the project the download
came from *now* (anyone else, and a download that names no project, gets one 404 that says
nothing more), and always as an attachment (a report is HTML: it is saved, never rendered on the
app's own origin).

Example:
    >>> gate = DownloadGate(None, Path("/data/downloads"), lambda scope: "dana", lambda u, p: True)
    >>> gate.requested({"path": "/gradio_api/file=/data/downloads/dl-1/r.html"})
    PosixPath('/data/downloads/dl-1/r.html')
    >>> gate.requested({"path": "/gradio_api/file=/tmp/gradio/abc/x.csv"}) is None
    True
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio.to_thread

from app.formats.file_names import ascii_name
from app.perimeter import http_body

FILE_ROUTES = ("/gradio_api/file=", "/gradio_api/file/")
GONE = "No such download: downloads are removed after a day, and only people who may read its project get one."


PROJECT_FILE = ".project"  # in a download's folder: the id of the project it came from


def download_project(path: Path) -> int | None:
    """The id of the project a download (a file in its own folder, written by
    :func:`app.services.projects.downloads.new_download`) came from; None when its folder names none."""
    try:
        return int((path.parent / PROJECT_FILE).read_text(encoding="ascii"))
    except (OSError, ValueError):
        return None


class DownloadGate:
    """ASGI middleware in front of Gradio's file routes (see the module). ``user_of(scope)``:
    the session's user (None: none); ``may_read(user, project_id)``: whether they may read the
    project now."""

    def __init__(
        self,
        app: Any,
        root: Path,
        user_of: Callable[[http_body.Scope], str | None],
        may_read: Callable[[str | None, int], bool],
    ) -> None:
        self.app, self.root = app, Path(os.path.abspath(root))
        self.user_of, self.may_read = user_of, may_read

    def requested(self, scope: http_body.Scope) -> Path | None:
        """The download a request asks for (None: not a file under the downloads folder)."""
        path = str(scope.get("path", ""))
        prefix = next((p for p in FILE_ROUTES if path.startswith(p)), None)
        if prefix is None:
            return None
        target = Path(os.path.abspath(path[len(prefix) :]))
        return target if target.is_relative_to(self.root) and target != self.root else None

    async def __call__(
        self, scope: http_body.Scope, receive: http_body.Receive, send: http_body.Send
    ) -> None:
        target = self.requested(scope) if scope["type"] == "http" else None
        if target is None:
            await self.app(scope, receive, send)
            return
        project = download_project(target)
        user = self.user_of(scope)
        allowed = project is not None and await anyio.to_thread.run_sync(
            self.may_read, user, project
        )
        if not allowed:
            await http_body.answer(send, 404, GONE)
            return

        async def attachment(message: http_body.Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (k, v)
                    for k, v in message.get("headers", [])
                    if k.lower() not in (b"content-disposition", b"x-content-type-options")
                ]
                plain = ascii_name(target.name, f"project-{project}")
                disposition = (
                    f"attachment; filename=\"{plain}\"; filename*=UTF-8''{quote(target.name)}"
                )
                headers += [
                    (b"content-disposition", disposition.encode("latin-1")),
                    (b"x-content-type-options", b"nosniff"),
                ]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, attachment)
