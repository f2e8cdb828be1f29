"""Every refused call in the security log (issue 56, row 11): a REST call or a Gradio route
answered 401, 403 or 404 (no or a bad token or session, a role too low, a project the caller is
no member of, a download not theirs, an upload from another site), with who (when known), from
where and what was asked. :class:`DeniedCalls` watches the answers at the web app's edge and hands
each refusal to ``record(user, address, detail)`` (the app writes it off the event loop, a bounded
number a minute per source: :func:`app.services.projects.accounts.denied`).

Example:
    >>> watched({"type": "http", "path": "/api/v1/projects/x/predict"}, 404)
    True
    >>> watched({"type": "http", "path": "/assets/index.js"}, 404)
    False
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.perimeter import http_body
from app.perimeter.http_guard import session_user

DENIED = frozenset({401, 403, 404})
WATCHED = ("/api/", "/gradio_api/", "/login", "/logout")


def watched(scope: http_body.Scope, status: int) -> bool:
    """Whether an answer is a refusal the security log keeps."""
    return (
        scope["type"] == "http"
        and status in DENIED
        and str(scope.get("path", "")).startswith(WATCHED)
    )


def caller(scope: http_body.Scope) -> str:
    """Who made a request, when known: the REST token's user (set by the API's gate), else the
    Gradio session's ("": nobody signed in)."""
    actor = (scope.get("state") or {}).get("actor")
    if actor is not None:
        return str(getattr(actor, "name", ""))
    return session_user(scope) or ""  # "" also when no Gradio app serves this scope


class DeniedCalls:
    """ASGI middleware: hands each refusal to ``record(user, address, detail)`` (see the
    module); the answer itself goes out unchanged."""

    def __init__(self, app: Any, record: Callable[[str, str, str], None]) -> None:
        self.app, self.record = app, record

    async def __call__(
        self, scope: http_body.Scope, receive: http_body.Receive, send: http_body.Send
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def watch(message: http_body.Message) -> None:
            if message["type"] == "http.response.start" and watched(scope, message["status"]):
                client = scope.get("client") or ("", 0)
                path = str(scope.get("path", ""))[:200]
                detail = f"{scope.get('method', '')} {path} -> {message['status']}"
                self.record(caller(scope), str(client[0]), detail)
            await send(message)

        await self.app(scope, receive, watch)
