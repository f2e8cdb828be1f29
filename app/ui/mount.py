"""The Gradio UI mounted under the REST API's FastAPI app (one server, one port): the UI at
``/`` with its ``/gradio_api/...`` endpoints, the JSON routes at ``/api/v1`` and ``/docs``."""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import gradio as gr
from fastapi import FastAPI
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware

import assets
from app.perimeter.http_guard import Sessions, SignInForm, SignInRequired
from app.perimeter.http_origin import OwnHostOnly, own_names, own_origins
from app.perimeter.uploads import NOT_AN_UPLOAD, foreign_files
from app.ui.first_script import FirstScript

logger = logging.getLogger(__name__)
AUTH_MESSAGE = "Intent Studio: sign in (ask an admin for an account)."
# owned(signed-in name or None, path): whether the file is that user's upload waiting to be used
Owned = Callable[[str | None, str], bool]


def _username(request: Any) -> str | None:
    """The signed-in name of an event's request (a batch's: its one user, else None)."""
    if isinstance(request, list):
        names = {getattr(r, "username", None) for r in request}
        return names.pop() if len(names) == 1 else None
    return getattr(request, "username", None)


def only_own_uploads(
    demo: gr.Blocks, owned: Owned, refused: Callable[[str | None, str], None] | None = None
) -> None:
    """Every file an event of ``demo`` receives must be ``owned`` by the user sending it (issue
    56, row 1: :mod:`app.perimeter.uploads`). Checked in ``demo.process_api``, which every route
    that runs an event calls (the queue, ``/call``, ``/run``) before Gradio reads or copies any
    file an event names; a refusal is :data:`app.perimeter.uploads.NOT_AN_UPLOAD`."""
    process_api = demo.process_api
    signature = inspect.signature(process_api)

    @functools.wraps(process_api)
    async def checked(*args: Any, **kwargs: Any) -> Any:
        call = signature.bind(*args, **kwargs)
        user = _username(call.arguments.get("request"))
        foreign = foreign_files(call.arguments.get("inputs"), lambda path: owned(user, path))
        if foreign:
            logger.warning(
                "refused an event of %r naming %d file(s) not uploaded", user, len(foreign)
            )
            if refused is not None:
                refused(user, f"an event named {len(foreign)} file(s) it did not upload")
            raise gr.Error(NOT_AN_UPLOAD, print_exception=False)
        return await process_api(*args, **kwargs)

    demo.process_api = checked  # type: ignore[method-assign]


# What a call gets when Gradio could not read one of its values for its input component (text
# for a number, a list for a text): Gradio's own answer named its internals ("Could not
# preprocess input component at index 2 (a `number` component)...") after a traceback in the log.
NOT_TAKEN = (
    "This call sent a value one of its inputs does not take (text where a number goes, a list "
    "where a text goes...). Nothing was changed."
)


def quiet_refusals(demo: gr.Blocks) -> None:
    """A value an event's input component does not take is refused in the app's words
    (:data:`NOT_TAKEN`), and no refusal (a ``gr.Error``: Gradio's check of a number's minimum,
    the app's own) writes a traceback to the log: a user's bad input is no fault of the server
    (issue 64). Checked in ``demo.process_api``, which every route that runs an event calls."""
    from gradio.exceptions import ComponentProcessingError

    process_api = demo.process_api

    @functools.wraps(process_api)
    async def answered(*args: Any, **kwargs: Any) -> Any:
        try:
            return await process_api(*args, **kwargs)
        except ComponentProcessingError:
            raise gr.Error(NOT_TAKEN, print_exception=False) from None
        except gr.Error as exc:
            exc.print_exception = False
            raise

    demo.process_api = answered  # type: ignore[method-assign]


def no_queue_summary(demo: gr.Blocks) -> None:
    """Gradio's queue summed up its last 10,000 events after every event (a pandas table of
    them grouped by function, three percentiles each: 34-46 ms of CPU an event on a 2-core Xeon,
    tens of events a second while someone labels) for a ``/monitoring`` dashboard the app does
    not serve. It keeps one event now and never sums them up. Gradio's own names for the two
    settings (one misspelled there); a Gradio without them is said in the log, nothing breaks."""
    queue = demo._queue
    for name, value in (("ANALYTICS_MAX_EVENTS", 1), ("ANAYLTICS_CACHE_FREQUENCY", 2**62)):
        if not hasattr(queue, name):
            logger.warning("Gradio's queue has no %s: it may sum up its events again", name)
        setattr(queue, name, value)


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
    owned: Owned | None = None,
    downloads: tuple[Path, Middleware] | None = None,
    signed_out: Callable[[str, str], None] | None = None,
    refused: Callable[[str | None, str], None] | None = None,
) -> FastAPI:
    """Mount ``demo`` at ``/`` of ``api``. With ``auth`` (multi-user mode) the sign-in page guards
    the UI, :class:`app.perimeter.http_guard.SignInForm` its form and
    :class:`app.perimeter.http_guard.SignInRequired` every ``/gradio_api/`` route (with ``sessions``, each
    request's session checked against the users table); the API's own routes check their tokens
    themselves (:mod:`app.api.gate`). Without (single-user mode) only the app's own host names
    are served (:class:`app.perimeter.http_origin.OwnHostOnly`). Either way, only the app's own origins
    (``public_hosts`` among them) may call it across origins with credentials. ``uploads``: the
    middleware that bounds uploads (:class:`app.perimeter.upload_gate.UploadGate`); ``owned``: which
    files an event may name (:func:`only_own_uploads`; None: none); ``downloads``: the folder of
    the files the app makes to download, served from there (not copied into Gradio's cache) by
    the middleware with it (:class:`app.perimeter.file_gate.FileGate`: it answers every file
    route); ``signed_out(name, address)`` and ``refused(user, detail)`` (an event naming files not uploaded): for the
    security log."""
    quiet_refusals(demo)
    only_own_uploads(demo, owned or (lambda user, path: False), refused)  # its check first
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
            Middleware(SignInForm, sessions=sessions, signed_out=signed_out),  # type: ignore[arg-type]
            Middleware(SignInRequired, sessions=sessions),  # type: ignore[arg-type]
        ]
        if auth is not None
        else []
    )
    if uploads is not None:  # inside the sign-in check: it knows who uploads
        guard.append(uploads)
    if downloads is not None:  # inside the sign-in check: it knows who downloads
        folder, gate = downloads
        folder.mkdir(parents=True, exist_ok=True)
        gr.set_static_paths([folder])  # served from there: no copy outside the downloads' cap
        guard.append(gate)
    # innermost: it reads the page as Gradio writes it (compressed outside, by Gradio's middleware)
    guard.append(Middleware(FirstScript, script=assets.text("frames.js")))  # type: ignore[arg-type]
    app_kwargs: dict[str, Any] = {"middleware": guard}
    demo.queue(default_concurrency_limit=4)
    no_queue_summary(demo)
    mounted = gr.mount_gradio_app(
        api,
        demo,
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
    # Gradio's own check of the files an event names stands aside until an app has "launched";
    # a mounted one never does. The app's check (only_own_uploads) comes first either way.
    demo.has_launched = True
    return mounted
