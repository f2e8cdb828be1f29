"""The upload route's door (``POST /gradio_api/upload``: the Data tab's import, the Train tab's
bundle), bounded: who may upload, how much may wait for an import, and for how long.

Gradio stores every upload in its cache folder and removes it after a day; any signed-in user,
viewers too, could fill the disk (288 MB in 3 s). :class:`UploadGate` sits in front of the upload
route and:

- refuses an upload posted from another site (403): with no sign-in (single-user mode) a plain
  cross-site form could fill the upload quota, and the user's own import got 413 for an hour
  (issue 56, row 6); its ``Origin`` (else ``Referer``) must be the server it was sent to
  (:func:`app.perimeter.http_guard.same_site`);
- refuses a user who can import nothing (a viewer: 403);
- bounds one request (:data:`app.limits.UPLOAD_REQUEST_BYTES`: one file of
  :data:`app.config.MAX_UPLOAD_BYTES` and its form), what one user's uploads waiting for an
  import may hold and everyone's together (:meth:`app.perimeter.uploads.Uploads.room`): 413 from
  ``Content-Length``, or while the body streams in, counting uploads in flight;
- records each stored file in :class:`app.perimeter.uploads.Uploads` (``ServingState.uploads``),
  the record every process holds (this door is the web app's alone: :mod:`app.web`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import anyio.to_thread

from app.perimeter import http_body
from app.perimeter.http_guard import same_site
from app.perimeter.uploads import Uploads, mib

logger = logging.getLogger(__name__)

UPLOAD_PATH = "/gradio_api/upload"


def _is_upload(scope: http_body.Scope) -> bool:
    return (
        scope["type"] == "http"
        and scope.get("method") == "POST"
        and str(scope["path"]).rstrip("/") == UPLOAD_PATH
    )


class UploadGate:
    """ASGI middleware of the Gradio app (inside the sign-in check): see the module.
    ``user_of(scope)``: who uploads; ``refusal(user)``: why they may not (None: they may)."""

    def __init__(
        self,
        app: Any,
        uploads: Uploads,
        user_of: Callable[[http_body.Scope], str | None],
        refusal: Callable[[str], str | None] | None = None,
    ) -> None:
        self.app, self.uploads, self.user_of, self.refusal = app, uploads, user_of, refusal

    async def __call__(
        self, scope: http_body.Scope, receive: http_body.Receive, send: http_body.Send
    ) -> None:
        if not _is_upload(scope):
            await self.app(scope, receive, send)
            return
        if not same_site(scope):
            await http_body.answer(send, 403, "Upload files from this app's own page.")
            return
        user = self.user_of(scope) or ""
        if self.refusal is not None:
            why = await anyio.to_thread.run_sync(self.refusal, user)
            if why is not None:
                await http_body.answer(send, 403, why)
                return
        room, why = self.uploads.room(user)
        declared = next(
            (int(v) for k, v in scope.get("headers", []) if k == b"content-length" and v.isdigit()),
            None,
        )
        if room <= 0 or (declared is not None and declared > room):
            size = f" ({mib(declared)})" if declared is not None else ""
            limit = why or f"one upload may be at most {mib(room)}"
            await http_body.answer(send, 413, f"Upload refused{size}: {limit}.")
            return
        reserved = declared if declared is not None else room
        body = bytearray()
        status = 0

        async def keep(message: http_body.Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            elif message["type"] == "http.response.body" and len(body) < 1 << 20:
                body.extend(message.get("body", b""))
            await send(message)

        self.uploads.streaming(user, reserved)
        try:
            await http_body.within(scope, receive, keep, self.app, room)
            if status == 200:
                try:
                    paths = [str(p) for p in json.loads(bytes(body))]
                except (ValueError, TypeError):
                    logger.warning("an upload's answer did not list its files")
                    paths = []
                self.uploads.add(user, paths, reserved)
        finally:
            self.uploads.streaming(user, -reserved)
