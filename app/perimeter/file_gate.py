"""The one rule for what a file route (``/gradio_api/file=<path>``, ``/gradio_api/file/<path>``)
serves (issue 56 row 10, issue 73 items 1 and 8): a download to those who may read its project
now, an upload to whoever uploaded it, nothing else; always as an attachment.

Gradio hands a file out by its path to any signed-in session that knows the URL. The app's
downloads (reports, bundles, exports) are written in ``<data-dir>/downloads``, each in a folder
that names its project (:mod:`app.services.projects.downloads`); uploads wait in Gradio's upload
folder, recorded with their uploader (:class:`app.perimeter.uploads.Uploads`). :class:`FileGate`
answers every request of a file route itself; Gradio's own route never runs:

- The path is resolved first, as the kernel opens it (:func:`resolved`): ``..`` and doubled
  slashes, symlinks, ``/proc/<pid>/root``, ``/proc/self/cwd``, ``/proc/thread-self/cwd``,
  ``/proc/self/fd/<n>``... (percent-encoding is undone once by the server, as for every route;
  what is left is part of the name). A gate that matched the path as written was walked around
  by ``/proc/self/root<data-dir>/downloads/...``: 200, inline HTML on the app's origin.
- The file it names is then judged (:func:`served_file`): a file in a download's folder, to a user
  ``may_read(user, project)`` says may read that project now; an upload waiting to be used, to
  its uploader (``uploader_of(path)``); anything else (the database, a model file, a file outside
  the app, a folder, nothing) is one 404 that says nothing more (:data:`GONE`).
- What is served goes as an attachment (``Content-Disposition: attachment`` with the name in
  ASCII and in UTF-8, ``X-Content-Type-Options: nosniff``, ``Content-Security-Policy:
  sandbox``): a report is HTML, saved and never rendered on the app's origin.

Example:
    >>> requested({"path": "/gradio_api/file=/data/downloads/dl-1/r.html"})
    '/data/downloads/dl-1/r.html'
    >>> requested({"path": "/gradio_api/upload"}) is None
    True
"""

from __future__ import annotations

import mimetypes
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio.to_thread
from starlette.responses import FileResponse

from app.formats.file_names import ascii_name
from app.perimeter import http_body

FILE_ROUTES = ("/gradio_api/file=", "/gradio_api/file/")
GONE = (
    "No such download: a download is removed after a day and goes only to people who may read "
    "its project now; an upload, only to whoever uploaded it."
)
PROJECT_FILE = ".project"  # in a download's folder: the id of the project it came from

MayRead = Callable[[str | None, int], bool]  # (user, project id): may they read it now
UploaderOf = Callable[[str], str | None]  # (a resolved path): who uploaded it (None: no upload)


def download_project(path: Path) -> int | None:
    """The id of the project a download (a file in its own folder, written by
    :func:`app.services.projects.downloads.new_download`) came from; None when its folder names none."""
    try:
        return int((path.parent / PROJECT_FILE).read_text(encoding="ascii"))
    except (OSError, ValueError):
        return None


def requested(scope: http_body.Scope) -> str | None:
    """The path a file route's request names, as written (None: not a file route). A relative
    one is relative to the server's working directory, as Gradio's route reads it."""
    path = str(scope.get("path", ""))
    prefix = next((p for p in FILE_ROUTES if path.startswith(p)), None)
    return None if prefix is None else path[len(prefix) :]


def resolved(path: str) -> Path | None:
    """The file ``path`` names, as the kernel opens it: ``..`` and doubled slashes collapsed,
    every symlink followed (``/proc/<pid>/root``, ``/proc/self/cwd``, ``/proc/self/fd/<n>`` are
    symlinks too). None unless it is a regular file that the spelling reaches: a link whose
    target is another file than its text says (a deleted file's descriptor, another mount
    namespace's root) names nothing here.

    Example:
        >>> folder, name = os.path.split(__file__)
        >>> spelled = f"/proc/self/root{folder}/..//{os.path.basename(folder)}/{name}"
        >>> resolved(spelled) == Path(os.path.realpath(__file__))
        True
        >>> resolved("/proc/self/root/no/such/file") is None
        True
    """
    if not path or "\x00" in path:
        return None
    spelled = os.path.abspath(path)
    real = os.path.realpath(spelled)
    try:
        if not os.path.isfile(real) or not os.path.samefile(spelled, real):
            return None
    except (OSError, ValueError):
        return None
    return Path(real)


@dataclass(frozen=True)
class Served:
    """A file a file route serves: where it is, and the ASCII stand-in for a name with nothing
    readable in ASCII."""

    path: Path
    stand_in: str


def served_file(
    path: str,
    user: str | None,
    *,
    downloads: Path,
    may_read: MayRead,
    uploader_of: UploaderOf,
) -> Served | None:
    """What a file route serves ``user`` for ``path`` (None: nothing, 404): see the module.
    ``downloads``: the downloads folder (resolved)."""
    target = resolved(path)
    if target is None:
        return None
    if target.parent.parent == downloads and target.name != PROJECT_FILE:
        project = download_project(target)
        if project is not None and may_read(user, project):
            return Served(target, f"project-{project}")
        return None
    if user is not None and uploader_of(str(target)) == user:
        return Served(target, "upload")
    return None


def attachment(served: Served) -> FileResponse:
    """``served`` as an attachment (see the module)."""
    name = served.path.name
    plain = ascii_name(name, served.stand_in)
    headers = {
        "content-disposition": f"attachment; filename=\"{plain}\"; filename*=UTF-8''{quote(name)}",
        "x-content-type-options": "nosniff",
        "content-security-policy": "sandbox",
        "cache-control": "private, no-store",
    }
    media_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
    return FileResponse(served.path, headers=headers, media_type=media_type)


class FileGate:
    """ASGI middleware that answers Gradio's file routes (see the module). ``user_of(scope)``:
    the session's user (None: none); ``may_read(user, project_id)``: whether they may read the
    project now; ``uploader_of(path)``: who uploaded a file still waiting to be used."""

    def __init__(
        self,
        app: Any,
        downloads: Path,
        user_of: Callable[[http_body.Scope], str | None],
        may_read: MayRead,
        uploader_of: UploaderOf,
    ) -> None:
        self.app, self.downloads = app, Path(os.path.realpath(downloads))
        self.user_of, self.may_read, self.uploader_of = user_of, may_read, uploader_of

    async def __call__(
        self, scope: http_body.Scope, receive: http_body.Receive, send: http_body.Send
    ) -> None:
        path = requested(scope) if scope["type"] == "http" else None
        if path is None or scope.get("method") not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        user = self.user_of(scope)
        served = await anyio.to_thread.run_sync(
            lambda: served_file(
                path,
                user,
                downloads=self.downloads,
                may_read=self.may_read,
                uploader_of=self.uploader_of,
            )
        )
        if served is None:
            await http_body.answer(send, 404, GONE)
            return
        await attachment(served)(scope, receive, send)
