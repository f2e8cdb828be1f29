"""The one web app ``serve`` runs: the REST API with the Gradio UI mounted at ``/``, and in
multi-user mode the sign-in wiring: Gradio's ``auth`` callback through the rate limit and the
off-loop password check (:mod:`app.perimeter.sign_in`), and every browser session checked against the users
table (:class:`app.perimeter.http_guard.Sessions`). Tests build the same app and serve it on loopback.

Example:
    >>> app = web_app(serving_state, host="127.0.0.1", port=7860)  # doctest: +SKIP
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
from app.limits.store import LimitStore
from app.perimeter.denied import DeniedCalls
from app.perimeter.draining import Draining
from app.perimeter.file_gate import FileGate
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
    """Gradio's ``auth`` callback for ``serving_state``: a coroutine (Gradio awaits it on its event loop),
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
    """Browser sessions checked against ``serving_state``'s users table on every request."""

    def still_ok(name: str, signed_in_at: datetime) -> bool:
        return session_ok(db, name, signed_in_at)

    return Sessions(still_ok)


def upload_gate(serving_state: ServingState, limits: UploadLimits | None = None) -> Middleware:
    """The middleware that bounds uploads to ``serving_state.uploads`` (:mod:`app.perimeter.upload_gate`): in
    multi-user mode per signed-in user, refusing those whose role allows none of the actions an
    upload is for (:data:`app.access.actions.UPLOADS`: an import, a bundle opened)."""
    if limits is not None:
        serving_state.uploads.limits = limits

    def user_of(scope: Scope) -> str | None:
        return session_user(scope) if serving_state.settings.multi_user else LOCAL.name

    def refusal(name: str) -> str | None:
        if not serving_state.settings.multi_user:
            return None
        try:
            who = actor(serving_state.db, serving_state.settings.multi_user, name)
        except PermissionError as exc:
            return str(exc)
        least = min((a.role for a in UPLOADS), key=lambda role: RANK[role])
        if who.may(least):
            return None
        return (
            f"{who.name} is a {who.role}: uploading a file (to import it, or to open a bundle) "
            f"needs the {least} role."
        )

    return Middleware(UploadGate, uploads=serving_state.uploads, user_of=user_of, refusal=refusal)  # type: ignore[arg-type]


def file_gate(serving_state: ServingState) -> Middleware:
    """The middleware that answers Gradio's file routes by the one rule of
    :mod:`app.perimeter.file_gate`: a download only to those who may read its project now, an
    upload only to whoever uploaded it, nothing else, whatever the path's spelling."""
    from app.access import open_project

    def user_of(scope: Scope) -> str | None:
        return session_user(scope) if serving_state.settings.multi_user else LOCAL.name

    def may_read(name: str | None, project_id: int) -> bool:
        try:
            open_project(
                serving_state.db,
                project_id,
                actor(serving_state.db, serving_state.settings.multi_user, name),
            )
        except (PermissionError, NotFoundError):
            return False
        return True

    return Middleware(
        FileGate,  # type: ignore[arg-type]
        downloads=serving_state.settings.data_dir / DOWNLOADS,
        user_of=user_of,
        may_read=may_read,
        uploader_of=serving_state.uploads.uploader_of,
    )


def web_app(
    serving_state: ServingState,
    *,
    host: str,
    port: int,
    sign_in: SignInLimits | None = None,
    uploads: UploadLimits | None = None,
) -> FastAPI:
    """The API and the UI on one app, guarded as ``serving_state.settings.multi_user`` says."""
    from app.api import create_api
    from app.config import MAX_UPLOAD_BYTES
    from app.services.projects import accounts
    from app.ui.main import build_app, css
    from app.ui.mount import mount_ui

    multi = serving_state.settings.multi_user
    app = mount_ui(
        create_api(serving_state),
        build_app(serving_state),
        host=host,
        port=port,
        css=css(),
        max_file_size=MAX_UPLOAD_BYTES,
        auth=sign_in_auth(serving_state.db, sign_in, serving_state.limit_store) if multi else None,
        sessions=sessions_for(serving_state.db) if multi else None,
        public_hosts=serving_state.settings.public_hosts,
        uploads=upload_gate(serving_state, uploads),
        downloads=(serving_state.settings.data_dir / DOWNLOADS, file_gate(serving_state)),
        owned=lambda user, path: (
            bool(user or not multi) and serving_state.uploads.owns(user or LOCAL.name, path)
        ),
        signed_out=lambda name, address: later(
            serving_state.db, accounts.signed_out, name, address
        ),
        refused=lambda user, detail: later(
            serving_state.db, accounts.denied, user or "", "", detail
        ),
    )
    # every refusal of the API and the UI's routes in the security log
    app.add_middleware(
        DeniedCalls,  # type: ignore[arg-type]
        record=lambda user, address, detail: later(
            serving_state.db, accounts.denied, user, address, detail
        ),
    )
    # someone uses the app: a training worker beside it leaves them a core (app.worker.cpu_share)
    app.add_middleware(InUse, activity=Activity(serving_state.settings.data_dir))  # type: ignore[arg-type]
    # outermost: a stopping server answers every request 503, never 500 (app.perimeter.draining)
    app.add_middleware(Draining, stopping=lambda: serving_state.readiness.is_stopping)  # type: ignore[arg-type]
    return app
