"""Sign-in required for every API route in multi-user mode, not only the ones Gradio guards.

Gradio checks the login on its page, config, upload, queue and call routes, but answers others
without one (``/gradio_api/cancel``, ``/reset``, ``/heartbeat``, ``/stream``, run history...).
:class:`SignInRequired` sits in front of the whole app and answers 401 to any ``/gradio_api/``
request without a valid session, except the few the sign-in page itself needs.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import CookieError, SimpleCookie
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

API_PREFIX = "/gradio_api/"
# What the sign-in page calls before there is a session.
OPEN_API = frozenset({"login_check", "token", "app_id", "startup-events"})


def _cookies(scope: Scope) -> SimpleCookie:
    jar: SimpleCookie = SimpleCookie()
    for key, value in scope.get("headers", []):
        if key == b"cookie":
            try:
                jar.load(value.decode("latin-1"))
            except CookieError:
                continue
    return jar


def signed_in(scope: Scope) -> bool:
    """True when the request carries a session cookie of the Gradio app serving it."""
    app = scope.get("app")
    tokens = getattr(app, "tokens", None)
    cookie_id = getattr(app, "cookie_id", None)
    if tokens is None or cookie_id is None:
        return False
    jar = _cookies(scope)
    for name in (f"access-token-{cookie_id}", f"access-token-unsecure-{cookie_id}"):
        morsel = jar.get(name)
        if morsel is not None and morsel.value in tokens:
            return True
    return False


def needs_sign_in(path: str) -> bool:
    """Whether ``path`` is an API route that only a signed-in user may call.

    Example:
        >>> needs_sign_in("/gradio_api/cancel"), needs_sign_in("/gradio_api/login_check")
        (True, False)
        >>> needs_sign_in("/"), needs_sign_in("/login")
        (False, False)
    """
    if not path.startswith(API_PREFIX):
        return False
    return path[len(API_PREFIX) :].strip("/").split("/")[0] not in OPEN_API


class SignInRequired:
    """ASGI middleware: 401 for API routes without a session (see the module's docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and needs_sign_in(scope["path"]) and not signed_in(scope):
            body = json.dumps({"error": "Not authenticated: sign in first."}).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)
