"""The one web app ``serve`` runs: the REST API with the Gradio UI mounted at ``/``, and in
multi-user mode the sign-in wiring: Gradio's ``auth`` callback through the rate limit and the
off-loop password check (:mod:`app.perimeter.sign_in`), and every browser session checked against the users
table (:class:`app.perimeter.http_guard.Sessions`). Tests build the same app and serve it on loopback.

Example:
    >>> app = web_app(ctx, host="127.0.0.1", port=7860)  # doctest: +SKIP
    >>> uvicorn.run(app, host="127.0.0.1", port=7860)  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Concatenate

from fastapi import FastAPI, HTTPException
from starlette.middleware import Middleware

from app.access.actions import UPLOADS
from app.access.auth import LOCAL, RANK, actor, check_login, session_ok
from app.limit_store import LimitStore
from app.perimeter.denied import DeniedCalls
from app.perimeter.download_gate import DownloadGate
from app.perimeter.draining import Draining
from app.perimeter.http_guard import Scope, Sessions, session_user
from app.perimeter.in_use import Activity, InUse
from app.perimeter.sign_in import ADDRESS, SignInGate, SignInLimits, TooManyAttempts
from app.perimeter.upload_gate import UploadGate
from app.perimeter.uploads import UploadLimits
from app.services.projects.downloads import DOWNLOADS
from app.serving.state import ServingState
from core.errors import logged
from storage.db import Database
from storage.errors import NotFoundError

Writer = Callable[
    Concatenate[Database, ...], None
]  # a security-log write: the database, then its fields
logger = logging.getLogger(__name__)


def _record(db: Database, write: Writer, *args: str) -> None:
    try:
        write(db, *args)
    except Exception:  # the answer stands; only its record is missing
        logged(logger, "could not write to the security log")


def later(db: Database, write: Writer, *args: str) -> None:
    """Write to the security log in a thread, not on the event loop (called on it)."""
    asyncio.get_running_loop().run_in_executor(None, _record, db, write, *args)


def sign_in_auth(
    db: Database, limits: SignInLimits | None = None, store: LimitStore | None = None
) -> Callable[[str, str], Awaitable[bool]]:
    """Gradio's ``auth`` callback for ``ctx``: a coroutine (Gradio awaits it on its event loop),
    so the password check runs in a thread under the sign-in limits (their failures counted in
    ``store``: the app's, Redis for a team); a held-back attempt is a 429 with ``Retry-After``.
    Holds, failures and successful sign-ins are recorded in the security log."""
    from app.services.projects import accounts

    def held(what: str, name: str, address: str) -> None:
        logger.warning("sign-ins held back for %s %r", what, address if what == "address" else name)
        later(db, accounts.sign_in_held, what, name, address)

    def verify(name: str, password: str) -> bool:
        return check_login(db, name, password)

    gate = SignInGate(verify, limits, on_held=held, store=store)
    try:  # the addresses each name signed in from, read back from the security log
        for name, address, at in accounts.recent_sign_ins(db, gate.limits.known_for_s):
            if not gate.known(name, address, at):
                gate.remember(name, address, at)
    except Exception:  # the limits stand without them: sign-ins from there count as new
        logged(logger, "could not read the known sign-in addresses from the security log")

    async def auth(name: str, password: str) -> bool:
        try:
            ok = await gate.sign_in(name, password)
        except TooManyAttempts as exc:
            raise HTTPException(
                429, str(exc), headers={"Retry-After": str(exc.retry_after)}
            ) from exc
        later(db, accounts.signed_in if ok else accounts.sign_in_failed, name, ADDRESS.get())
        return ok

    auth.gate = gate  # type: ignore[attr-defined]  # for tests and benchmarks
    return auth


def sessions_for(db: Database) -> Sessions:
    """Browser sessions checked against ``ctx``'s users table on every request."""

    def still_ok(name: str, signed_in_at: datetime) -> bool:
        return session_ok(db, name, signed_in_at)

    return Sessions(still_ok)


def upload_gate(ctx: ServingState, limits: UploadLimits | None = None) -> Middleware:
    """The middleware that bounds uploads to ``ctx.uploads`` (:mod:`app.perimeter.upload_gate`): in
    multi-user mode per signed-in user, refusing those whose role allows none of the actions an
    upload is for (:data:`app.access.actions.UPLOADS`: an import, a bundle opened)."""
    if limits is not None:
        ctx.uploads.limits = limits

    def user_of(scope: Scope) -> str | None:
        return session_user(scope) if ctx.settings.multi_user else LOCAL.name

    def refusal(name: str) -> str | None:
        if not ctx.settings.multi_user:
            return None
        try:
            who = actor(ctx.db, ctx.settings.multi_user, name)
        except PermissionError as exc:
            return str(exc)
        least = min((a.role for a in UPLOADS), key=lambda role: RANK[role])
        if who.may(least):
            return None
        return (
            f"{who.name} is a {who.role}: uploading a file (to import it, or to open a bundle) "
            f"needs the {least} role."
        )

    return Middleware(UploadGate, uploads=ctx.uploads, user_of=user_of, refusal=refusal)  # type: ignore[arg-type]


def download_gate(ctx: ServingState) -> Middleware:
    """The middleware that serves downloads only to those who may read their project now
    (:mod:`app.perimeter.download_gate`)."""
    from app.access import open_project

    def user_of(scope: Scope) -> str | None:
        return session_user(scope) if ctx.settings.multi_user else LOCAL.name

    def may_read(name: str | None, project_id: int) -> bool:
        try:
            open_project(ctx.db, project_id, actor(ctx.db, ctx.settings.multi_user, name))
        except (PermissionError, NotFoundError):
            return False
        return True

    root = ctx.settings.data_dir / DOWNLOADS
    return Middleware(DownloadGate, root=root, user_of=user_of, may_read=may_read)  # type: ignore[arg-type]


def web_app(
    ctx: ServingState,
    *,
    host: str,
    port: int,
    sign_in: SignInLimits | None = None,
    uploads: UploadLimits | None = None,
) -> FastAPI:
    """The API and the UI on one app, guarded as ``ctx.settings.multi_user`` says."""
    from app.api import create_api
    from app.config import MAX_UPLOAD_BYTES
    from app.services.projects import accounts
    from app.ui.main import build_app, css
    from app.ui.mount import mount_ui

    multi = ctx.settings.multi_user
    app = mount_ui(
        create_api(ctx),
        build_app(ctx),
        host=host,
        port=port,
        css=css(),
        max_file_size=MAX_UPLOAD_BYTES,
        auth=sign_in_auth(ctx.db, sign_in, ctx.limit_store) if multi else None,
        sessions=sessions_for(ctx.db) if multi else None,
        public_hosts=ctx.settings.public_hosts,
        uploads=upload_gate(ctx, uploads),
        downloads=(ctx.settings.data_dir / DOWNLOADS, download_gate(ctx)),
        owned=lambda user, path: (
            bool(user or not multi) and ctx.uploads.owns(user or LOCAL.name, path)
        ),
        signed_out=lambda name, address: later(ctx.db, accounts.signed_out, name, address),
        refused=lambda user, detail: later(ctx.db, accounts.denied, user or "", "", detail),
    )
    # every refusal of the API and the UI's routes in the security log
    app.add_middleware(
        DeniedCalls,  # type: ignore[arg-type]
        record=lambda user, address, detail: later(ctx.db, accounts.denied, user, address, detail),
    )
    # someone uses the app: a training worker beside it leaves them a core (app.worker.cpu_share)
    app.add_middleware(InUse, activity=Activity(ctx.settings.data_dir))  # type: ignore[arg-type]
    # outermost: a stopping server answers every request 503, never 500 (app.perimeter.draining)
    app.add_middleware(Draining, stopping=lambda: ctx.readiness.is_stopping)  # type: ignore[arg-type]
    return app
