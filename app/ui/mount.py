"""The Gradio UI mounted under the REST API's FastAPI app (one server, one port): the UI at
``/`` with its ``/gradio_api/...`` endpoints, the JSON routes at ``/api/v1`` and ``/docs``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import gradio as gr
from fastapi import FastAPI
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware

from app.perimeter.http_guard import Sessions, SignInForm, SignInRequired
from app.perimeter.http_origin import OwnHostOnly, own_names, own_origins

AUTH_MESSAGE = "Intent Studio: sign in (ask an admin for an account)."


def mount_ui(
    api: FastAPI,
    demo: gr.Blocks,
    *,
    host: str,
    port: int,
    css: str,
    max_file_size: int,
    auth: Callable[[str, str], bool | Awaitable[bool]] | None,
    sessions: Sessions | None = None,
    public_hosts: Sequence[str] = (),
    uploads: Middleware | None = None,
) -> FastAPI:
    """Mount ``demo`` at ``/`` of ``api``. With ``auth`` (multi-user mode) the sign-in page guards
    the UI, :class:`app.perimeter.http_guard.SignInForm` its form and
    :class:`app.perimeter.http_guard.SignInRequired` every ``/gradio_api/`` route (with ``sessions``, each
    request's session checked against the users table); the API's own routes check their tokens
    themselves (:mod:`app.api.gate`). Without (single-user mode) only the app's own host names
    are served (:class:`app.perimeter.http_origin.OwnHostOnly`). Either way, only the app's own origins
    (``public_hosts`` among them) may call it across origins with credentials. ``uploads``: the
    middleware that bounds uploads (:class:`app.perimeter.uploads.UploadGate`)."""
    api.add_middleware(
        CORSMiddleware,  # Gradio's own CORS stands aside for it (see app.perimeter.http_origin)
        allow_origins=own_origins(host, port, public_hosts),
        allow_credentials=True,
        allow_methods=["*"],
        allow_headers=["*"],
    )
    if auth is None:
        api.add_middleware(OwnHostOnly, names=own_names(host, public_hosts))  # type: ignore[arg-type]
    guard = (
        [
            Middleware(SignInForm, sessions=sessions),  # type: ignore[arg-type]
            Middleware(SignInRequired, sessions=sessions),  # type: ignore[arg-type]
        ]
        if auth is not None
        else []
    )
    if uploads is not None:  # inside the sign-in check: it knows who uploads
        guard.append(uploads)
    app_kwargs: dict[str, Any] = {"middleware": guard}
    return gr.mount_gradio_app(
        api,
        demo.queue(default_concurrency_limit=4),
        path="/",
        server_name=host,
        server_port=port,
        app_kwargs=app_kwargs,
        auth=auth,
        auth_message=AUTH_MESSAGE,
        show_error=True,
        max_file_size=max_file_size,  # Gradio refuses a bigger upload before storing it
        ssr_mode=False,
        mcp_server=False,
        css=css,
    )
