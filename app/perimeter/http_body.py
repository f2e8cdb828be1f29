"""Request bodies of bounded size, refused before anything parses them.

:func:`declared_too_large` reads the ``Content-Length`` header (nothing of the body is read);
:func:`limited` wraps an ASGI ``receive`` so a body streaming in without one (chunked) raises
:class:`BodyTooLarge` at the first byte past the limit. :class:`BodyTooLarge` is an HTTP 413:
FastAPI and Starlette answer it as such wherever the body is read.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from starlette.exceptions import HTTPException

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def _size(limit: int) -> str:
    return f"{limit // 1024 // 1024} MiB" if limit >= 1024 * 1024 else f"{limit // 1024} KiB"


class BodyTooLarge(HTTPException):
    """The request body is over ``limit`` bytes: 413, nothing was read past the limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"The request body is larger than {_size(limit)}.")
        self.limit = limit


def declared_too_large(scope: Scope, limit: int) -> bool:
    """Whether the request's ``Content-Length`` says more than ``limit`` bytes (an unreadable
    one counts as too large).

    Example:
        >>> declared_too_large({"headers": [(b"content-length", b"104857600")]}, 2 << 20)
        True
        >>> declared_too_large({"headers": []}, 2 << 20)  # chunked: checked while it streams
        False
    """
    for key, value in scope.get("headers", []):
        if key == b"content-length":
            try:
                return int(value) > limit
            except ValueError:
                return True
    return False


def limited(receive: Receive, limit: int) -> Receive:
    """``receive`` that raises :class:`BodyTooLarge` once more than ``limit`` bytes came in."""
    seen = 0

    async def wrapped() -> Message:
        nonlocal seen
        message = await receive()
        if message.get("type") == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                raise BodyTooLarge(limit)
        return message

    return wrapped


async def respond(
    send: Send,
    status: int,
    content_type: bytes,
    body: bytes,
    headers: Iterable[tuple[bytes, bytes]] = (),
) -> None:
    """Send a whole response: ``status``, the ``content_type`` and length of ``body``, then
    ``headers``, then ``body``."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def answer(
    send: Send, status: int, message: str, headers: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    """Send ``{"error": message}`` with ``status`` (and closes the connection for a 413: the
    rest of the body is never read)."""
    body = json.dumps({"error": message}).encode()
    extra = [(b"connection", b"close")] if status == 413 else []
    await respond(send, status, b"application/json", body, [*extra, *headers])


async def within(scope: Scope, receive: Receive, send: Send, app: Any, limit: int) -> None:
    """Run ``app`` on a request whose body may be at most ``limit`` bytes: 413 from the header
    at once, or from the stream at the first byte too many (if no answer has started)."""
    if declared_too_large(scope, limit):
        await answer(send, 413, BodyTooLarge(limit).detail)
        return
    started = False

    async def tracking(message: Message) -> None:
        nonlocal started
        started = started or message.get("type") == "http.response.start"
        await send(message)

    try:
        await app(scope, limited(receive, limit), tracking)
    except BodyTooLarge as exc:
        if started:
            raise
        await answer(send, 413, str(exc.detail))
