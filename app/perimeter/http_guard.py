"""Sign-in required for every API route in multi-user mode, not only the ones Gradio guards, and
only for a user who may still act.

Gradio checks the login on its page, config, upload, queue and call routes, but answers others
without one (``/gradio_api/cancel``, ``/reset``, ``/heartbeat``, ``/stream``, run history...).
:class:`SignInRequired` sits in front of the whole app and answers 401 to any ``/gradio_api/``
request without a valid session, except the few the sign-in page itself needs, and 429 to a
user who already has :data:`app.limits.EVENTS_QUEUED_PER_USER` events waiting in Gradio's queue
(one session's flood of ``/gradio_api/call/predict`` would otherwise queue ahead of everyone).

Gradio keeps its sessions in memory and never asks again who they belong to. With
:class:`Sessions`, every request's session is checked against the database (its user exists, is
not locked, and has not changed password since signing in); one that fails is dropped from
Gradio's sessions at once, so the page shows the sign-in form and the API answers 401.
:class:`SignInForm` guards the sign-in form itself: a post from another site is refused (login
CSRF: its ``Origin``, or else ``Referer``, must be this server), the form's size is bounded, the
client's address is handed to the rate limit (:mod:`app.perimeter.sign_in`), and the session cookies (set
on sign-in, cleared on sign-out) are ``SameSite=Lax``, ``HttpOnly``, and ``Secure`` over TLS.
Signing out is a POST from the app's own page (issue 56, row 10: Gradio's ``GET /logout`` let any
site sign a user out of every session with a link): ``GET /logout`` answers a page with a
"Sign out" button, ``POST /logout`` from another site is refused.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, MutableMapping
from datetime import UTC, datetime
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import urlsplit

import anyio.to_thread

from app.limits import EVENTS_QUEUED_PER_USER, MAX_SIGN_IN_BODY_BYTES
from app.perimeter import http_body
from app.perimeter.sign_in import ADDRESS
from storage.errors import DatabaseUnavailable

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


def _session_tokens(scope: Scope) -> list[str]:
    """The session tokens the request's cookies carry for the Gradio app serving it (Gradio
    sets the same token in two cookies: once)."""
    cookie_id = getattr(scope.get("app"), "cookie_id", None)
    if cookie_id is None:
        return []
    jar = _cookies(scope)
    found = (jar.get(f"access-token-{c}{cookie_id}") for c in ("", "unsecure-"))
    return list(dict.fromkeys(morsel.value for morsel in found if morsel is not None))


def signed_in(scope: Scope) -> bool:
    """True when the request carries a session cookie of the Gradio app serving it."""
    tokens = getattr(scope.get("app"), "tokens", None)
    return tokens is not None and any(t in tokens for t in _session_tokens(scope))


def _utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


class Sessions:
    """When each browser session signed in, and whether it still counts: ``still_ok(name,
    signed_in_at)`` asks the database (:func:`app.access.auth.session_ok`), on every request."""

    def __init__(self, still_ok: Callable[[str, datetime], bool]) -> None:
        self.still_ok = still_ok
        self.signed_in_at: dict[str, datetime] = {}

    def started(self, token: str) -> None:
        self.signed_in_at[token] = _utcnow()

    async def check(self, scope: Scope) -> None:
        """Drop the request's session from Gradio's when its user may no longer act (or its
        sign-in was never seen here)."""
        tokens: dict[str, str] | None = getattr(scope.get("app"), "tokens", None)
        if tokens is None:
            return
        for token in _session_tokens(scope):
            name = tokens.get(token)
            if name is None:
                continue
            at = self.signed_in_at.get(token)
            ok = at is not None and await anyio.to_thread.run_sync(self.still_ok, name, at)
            if not ok:
                tokens.pop(token, None)
                self.signed_in_at.pop(token, None)
        if len(self.signed_in_at) > len(tokens) + 1000:  # signed out: forget them
            self.signed_in_at = {t: at for t, at in self.signed_in_at.items() if t in tokens}


def session_user(scope: Scope) -> str | None:
    """The name of the user whose session the request carries (None: no session)."""
    tokens = getattr(scope.get("app"), "tokens", None) or {}
    return next((tokens[t] for t in _session_tokens(scope) if t in tokens), None)


def _queues_an_event(scope: Scope) -> bool:
    path = str(scope["path"])
    return scope.get("method") == "POST" and (
        path.rstrip("/") == f"{API_PREFIX}queue/join" or path.startswith(f"{API_PREFIX}call/")
    )


def queued_events(app: Any, user: str) -> int:
    """How many events of ``user`` wait in Gradio's queue (0 when it cannot be read). One
    session's flood of ``/gradio_api/call/predict`` is refused past
    :data:`app.limits.EVENTS_QUEUED_PER_USER` instead of queueing ahead of everyone."""
    try:
        queues = app.get_blocks()._queue.event_queue_per_concurrency_id.values()
        return sum(1 for q in queues for event in list(q.queue) if event.username == user)
    except AttributeError:
        return 0


# Files that every page loads; they show nothing of anyone's data, so no database check.
STATIC_PREFIXES = ("/assets/", "/static/", "/svelte/", "/favicon.ico")


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
    """ASGI middleware: 401 for API routes without a session, and (with ``sessions``) every
    session checked against the database first (see the module's docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        sessions: Sessions | None = None,
        queued_per_user: int = EVENTS_QUEUED_PER_USER,
    ) -> None:
        self.app = app
        self.sessions = sessions
        self.queued_per_user = queued_per_user
        self._joining: Counter[str] = Counter()  # user -> requests joining the queue now

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if self.sessions is not None and not scope["path"].startswith(STATIC_PREFIXES):
            try:
                await self.sessions.check(scope)
            except DatabaseUnavailable as exc:  # who it is cannot be checked now
                if scope["type"] == "http":
                    await http_body.answer(send, 503, str(exc), [(b"retry-after", b"1")])
                return
        user = session_user(scope) if scope["type"] == "http" and _queues_an_event(scope) else None
        if user is not None:  # joining Gradio's queue: within the user's share
            waiting = self._joining[user] + queued_events(scope.get("app"), user)
            if waiting >= self.queued_per_user:
                message = f"Busy: {user} already has {waiting} requests waiting; retry in a moment."
                await http_body.answer(send, 429, message, [(b"retry-after", b"1")])
                return
            self._joining[user] += 1  # until its event is in the queue (the answer)
            try:
                await self.app(scope, receive, send)
            finally:
                self._joining[user] -= 1
                if not self._joining[user]:
                    del self._joining[user]
            return
        if scope["type"] == "http" and needs_sign_in(scope["path"]) and not signed_in(scope):
            await http_body.answer(send, 401, "Not authenticated: sign in first.")
            return
        await self.app(scope, receive, send)


SIGN_IN_PATHS = frozenset({"/login", "/login/"})
SIGN_OUT_PATHS = frozenset({"/logout", "/logout/"})
# The routes that set (sign in) or clear (sign out) Gradio's session cookies.
COOKIE_PATHS = SIGN_IN_PATHS | SIGN_OUT_PATHS
SIGN_OUT_PAGE = (
    "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Sign out · Intent Studio"
    "</title><meta name='viewport' content='width=device-width'></head><body style='font-family:"
    "system-ui,sans-serif;max-width:32rem;margin:4rem auto'><form method='post'><p>Sign out of "
    "Intent Studio (every session of yours)?</p><button type='submit'>Sign out</button> "
    "<a href='./'>Back</a></form></body></html>"
).encode()
HTML, NO_STORE = b"text/html; charset=utf-8", (b"cache-control", b"no-store")


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope.get("headers", []):
        if key == name:
            return str(value.decode("latin-1"))
    return ""


def same_site(scope: Scope) -> bool:
    """Whether a form post comes from this server's own page: its ``Origin`` (else its
    ``Referer``) names the host it was sent to. A request with neither is not a browser's
    cross-site post (browsers send ``Origin`` on every cross-origin POST) and passes.

    Example:
        >>> host = (b"host", b"studio.example:7860")
        >>> same_site({"headers": [host, (b"origin", b"http://studio.example:7860")]})
        True
        >>> same_site({"headers": [host, (b"origin", b"https://evil.example")]})
        False
        >>> same_site({"headers": [host, (b"origin", b"null")]})
        False
    """
    source = _header(scope, b"origin") or _header(scope, b"referer")
    if not source:
        return True
    host = _header(scope, b"host").lower()
    return bool(host) and urlsplit(source).netloc.lower() == host


def _strict_cookie(value: bytes, *, tls: bool = False) -> bytes:
    """A ``Set-Cookie`` value with ``SameSite=Lax`` (Gradio sets ``None`` on one of its two
    session cookies, for embedding in other sites) and ``HttpOnly``; and ``Secure`` over TLS
    (Gradio sets it on one only: the other is for plain HTTP, where a browser drops a Secure one).

    Example:
        >>> _strict_cookie(b"access-token-unsecure-x=t; Path=/", tls=True)
        b'access-token-unsecure-x=t; Path=/; HttpOnly; SameSite=Lax; Secure'
    """
    parts = [p.strip() for p in value.decode("latin-1").split(";")]
    flags = ("samesite", "httponly", "secure") if tls else ("samesite", "httponly")
    kept = [p for p in parts if p.split("=")[0].strip().lower() not in flags]
    return "; ".join([*kept, "HttpOnly", "SameSite=Lax", *(["Secure"] if tls else [])]).encode(
        "latin-1"
    )


def over_tls(scope: Scope) -> bool:
    """Whether the request came over HTTPS: served with TLS, or through a proxy whose
    ``X-Forwarded-Proto: https`` uvicorn trusts (``FORWARDED_ALLOW_IPS``, 127.0.0.1 by default:
    it sets the scheme)."""
    return scope.get("scheme") in ("https", "wss")


class SignInForm:
    """ASGI middleware for the sign-in form's POST (see the module's docstring). With
    ``sessions``, each session it opens is recorded there."""

    def __init__(
        self,
        app: ASGIApp,
        sessions: Sessions | None = None,
        signed_out: Callable[[str, str], None] | None = None,
    ) -> None:
        self.app = app
        self.sessions = sessions
        self.signed_out = signed_out  # (name, address): for the security log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in COOKIE_PATHS:
            await self.app(scope, receive, send)
            return
        cookie_id = getattr(scope.get("app"), "cookie_id", "")
        sessions = self.sessions if scope["path"] in SIGN_IN_PATHS else None
        tls = over_tls(scope)

        async def send_strict(message: Message) -> None:
            if message.get("type") == "http.response.start":
                headers = []
                for key, value in message.get("headers", []):
                    if key == b"set-cookie":
                        name, _, rest = value.partition(b"=")
                        if sessions is not None and name.decode("latin-1").startswith(
                            f"access-token-unsecure-{cookie_id}"
                        ):
                            sessions.started(rest.split(b";")[0].decode("latin-1"))
                        value = _strict_cookie(value, tls=tls)
                    headers.append((key, value))
                message = {**message, "headers": headers}
            await send(message)

        if scope["path"] in SIGN_OUT_PATHS:
            if scope.get("method") == "POST" and same_site(scope):  # Gradio's route is a GET
                who = session_user(scope)
                await self.app({**scope, "method": "GET"}, receive, send_strict)
                if who is not None and self.signed_out is not None:
                    self.signed_out(who, str((scope.get("client") or ("", 0))[0]))
            elif scope.get("method") == "POST":
                await http_body.answer(send, 403, "Sign out from this server's own page.")
            else:  # a link or a redirect from anywhere only shows the button
                await http_body.respond(send, 200, HTML, SIGN_OUT_PAGE, [NO_STORE])
            return
        if scope.get("method") != "POST":
            await self.app(scope, receive, send_strict)
            return
        if not same_site(scope):
            await http_body.answer(send, 403, "Sign in from this server's own page.")
            return
        client = scope.get("client") or ("", 0)
        token = ADDRESS.set(str(client[0]))
        try:
            await http_body.within(scope, receive, send_strict, self.app, MAX_SIGN_IN_BODY_BYTES)
        finally:
            ADDRESS.reset(token)
