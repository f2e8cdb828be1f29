"""A stopping server's answers: 503 with ``Retry-After``, never a 500.

Once ``serve`` got SIGTERM or Ctrl+C (``stopping()`` says so:
:attr:`app.serving.readiness.Readiness.is_stopping`), a new HTTP request is answered 503 ("the
server is stopping") at once: a load balancer, a REST client or a browser retries it elsewhere
or later. A request under way gets uvicorn's graceful time (5 s) to end; one still waiting then
(behind the start-up's warm-up, say) is cancelled by uvicorn, which answered it 500 with a
traceback in the log: it is answered 503 here instead, when it had not begun its answer. A
stream that had begun (an open page's heartbeat or events) is ended there, its client told the
response is complete (it reconnects and is answered 503), not logged as an exception.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from app.perimeter.http_body import Message, Receive, Scope, Send, answer

logger = logging.getLogger(__name__)

RETRY_AFTER_S = 5
STOPPING = "The server is stopping; try again in a moment."


class Draining:
    """ASGI middleware (see the module), outermost: it sees every HTTP request."""

    def __init__(self, app: Any, stopping: Callable[[], bool]) -> None:
        self.app, self.stopping = app, stopping

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        retry = [(b"retry-after", str(RETRY_AFTER_S).encode())]
        if self.stopping():
            await answer(send, 503, STOPPING, retry)
            return
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except asyncio.CancelledError:
            if not self.stopping():
                raise
            if started:  # a stream still open (a page's heartbeat or events): ended, not a 500
                logger.info(
                    "%s %s: a stream open at the stop, ended", scope["method"], scope["path"]
                )
                with contextlib.suppress(Exception):  # the client may have gone meanwhile
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            logger.warning(
                "%s %s cut short by the stop: answered 503", scope["method"], scope["path"]
            )
            await answer(send, 503, STOPPING, retry)
