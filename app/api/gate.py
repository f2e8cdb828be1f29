"""What every ``/api/v1`` request passes before FastAPI reads its body: in multi-user mode its
token (401 at once without a valid one, the body unread; ``/api/v1/health`` and ``/ready`` need none), then the body's size
(:data:`app.limits.MAX_API_BODY_BYTES`: 413 from ``Content-Length``, or while a chunked body
streams in). FastAPI parses a body before it resolves the route's dependencies, so without this a
100 MB body was read and parsed for a caller with no token at all.

The token's user is looked up on every request (a removed or locked user's token stops at once)
and handed to the route in ``request.state.actor`` (:func:`app.api.security.caller`)."""

from __future__ import annotations

import asyncio
from typing import Any

from app.access.auth import token_actor
from app.limits import MAX_API_BODY_BYTES
from app.perimeter import http_body
from app.serving.state import ServingState
from storage.errors import DatabaseUnavailable

PREFIX = "/api/v1/"
HEALTH = PREFIX + "health"  # for load balancers and containers: no token
READY = PREFIX + "ready"  # the same
OPEN = (HEALTH, READY)
NEEDS_TOKEN = (
    "Send your API token as `Authorization: Bearer TOKEN` "
    "(an admin creates one with `intent-studio users token NAME`)."
)
CHALLENGE = [(b"www-authenticate", b"Bearer")]


def bearer_token(scope: http_body.Scope) -> str:
    """The token of the request's ``Authorization: Bearer ...`` header ("" when none).

    Example:
        >>> bearer_token({"headers": [(b"authorization", b"Bearer is_abc ")]})
        'is_abc'
    """
    for key, value in scope.get("headers", []):
        if key == b"authorization":
            scheme, _, token = value.decode("latin-1").strip().partition(" ")
            if scheme.lower() == "bearer":
                return token.strip()
    return ""


class ApiGate:
    """ASGI middleware of the API app: token first, then the body limit (see the module)."""

    def __init__(
        self, app: Any, serving_state: ServingState, limit: int = MAX_API_BODY_BYTES
    ) -> None:
        self.app, self.serving_state, self.limit = app, serving_state, limit

    async def __call__(
        self, scope: http_body.Scope, receive: http_body.Receive, send: http_body.Send
    ) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(PREFIX):
            await self.app(scope, receive, send)
            return
        if self.serving_state.settings.multi_user and scope["path"] not in OPEN:
            token = bearer_token(scope)
            if not token:
                await http_body.answer(send, 401, NEEDS_TOKEN, CHALLENGE)
                return
            try:
                who = await asyncio.to_thread(token_actor, self.serving_state.db, token)
            except PermissionError as exc:
                await http_body.answer(send, 401, str(exc), CHALLENGE)
                return
            except DatabaseUnavailable as exc:  # the token cannot be checked now
                await http_body.answer(send, 503, str(exc), [(b"retry-after", b"1")])
                return
            scope.setdefault("state", {})["actor"] = who
        await http_body.within(scope, receive, send, self.app, self.limit)
