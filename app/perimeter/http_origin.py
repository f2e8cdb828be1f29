"""Which names and origins the app answers to.

- **Host names (single-user mode).** With no sign-in, a web page whose name was made to resolve
  to 127.0.0.1 (DNS rebinding) would be the same origin as the app in the browser's eyes and
  could read and change everything. :class:`OwnHostOnly` serves a request only when its ``Host``
  is one of the app's own names: the loopback names (``127.0.0.1``, ``localhost``, ``[::1]``),
  the address it is bound to, and ``INTENT_STUDIO_PUBLIC_HOST``; anything else gets 400.
- **Origins.** Gradio's own CORS lets any loopback origin (another local server's page) make
  credentialed calls, and any origin at all when the ``Host`` is not a loopback name. It stands
  aside when the parent app configures Starlette's ``CORSMiddleware``, so the app does, allowing
  only its own origins (:func:`own_origins`): a page of the app itself needs no CORS at all.

Example:
    >>> host_name("LocalHost:7860"), host_name("[::1]:7860"), host_name("studio.example")
    ('localhost', '[::1]', 'studio.example')
    >>> sorted(own_names("127.0.0.1", ["studio.example:8443"]))
    ['127.0.0.1', '[::1]', 'localhost', 'studio.example']
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from app.config import ENV_PUBLIC_HOST
from app.perimeter import http_body

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def host_name(host: str) -> str:
    """The name of a ``Host`` header's value (or a ``name:port``), lower-case, without the
    port; an IPv6 address keeps its brackets."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _bracketed(address: str) -> str:
    return f"[{address}]" if ":" in address and not address.startswith("[") else address


def own_names(bound: str, public: Iterable[str] = ()) -> frozenset[str]:
    """The names the app serves: the loopback names, the address it is bound to, ``public``."""
    return frozenset(
        {*LOOPBACK_NAMES, host_name(_bracketed(bound)), *(host_name(p) for p in public)}
    )


def own_origins(bound: str, port: int, public: Iterable[str] = ()) -> list[str]:
    """The origins of the app's own pages: ``http://NAME:PORT`` for its loopback names and the
    address it is bound to, ``http(s)://NAME[:PORT]`` for each public name (behind a proxy).

    Example:
        >>> own_origins("127.0.0.1", 7860, ["studio.example"])[-2:]
        ['http://studio.example', 'https://studio.example']
    """
    local = dict.fromkeys([*LOOPBACK_NAMES, _bracketed(bound)])
    origins = [f"http://{name}:{port}" for name in local]
    return origins + [f"{scheme}://{p}" for p in public for scheme in ("http", "https")]


def _host(scope: http_body.Scope) -> str:
    for key, value in scope.get("headers", []):
        if key == b"host":
            return str(value.decode("latin-1"))
    return ""


class OwnHostOnly:
    """ASGI middleware: 400 for a request (or a websocket) whose ``Host`` is not one of
    ``names`` (see the module)."""

    def __init__(self, app: Any, names: Iterable[str]) -> None:
        self.app = app
        self.names = frozenset(names)

    async def __call__(
        self, scope: http_body.Scope, receive: http_body.Receive, send: http_body.Send
    ) -> None:
        if scope["type"] not in ("http", "websocket") or host_name(_host(scope)) in self.names:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        names = ", ".join(sorted(self.names))
        await http_body.answer(
            send,
            400,
            f"This app answers only to its own host names ({names}): open it by one of them, "
            f"or name another in {ENV_PUBLIC_HOST}.",
        )
