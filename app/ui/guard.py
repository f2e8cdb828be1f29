"""The role check every write callback of the UI passes through: the signed-in name Gradio gives
the request is checked on the server (:func:`app.auth.require`), a refusal becomes a message and
changes nothing, and the acting user is recorded for the audit log."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import gradio as gr

from app.auth import acting_as, require
from app.context import AppContext
from app.ui.common import problem


def guarded(ctx: AppContext, role: str, *, outputs: int = 1) -> Callable[[Callable[..., Any]], Any]:
    """Wrap a Gradio callback so it runs only for users with ``role`` (checked on the server with
    the name Gradio signed in). A refusal becomes the callback's first output as a message (the
    other outputs are left unchanged); the acting user is recorded for the audit log."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def run(*args: Any, request: Any = None) -> Any:
            if request is None and args and isinstance(args[-1], gr.Request):
                *rest, request = args  # Gradio passes the request in its place in the signature
                args = tuple(rest)
            try:
                who = require(ctx, getattr(request, "username", None), role)
            except PermissionError as exc:
                refusal = problem(str(exc))
                return refusal if outputs == 1 else (refusal, *[gr.update()] * (outputs - 1))
            with acting_as(who):
                return fn(*args)

        params = list(inspect.signature(fn).parameters.values())
        request_param = inspect.Parameter(
            "request", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None, annotation=gr.Request
        )
        run.__signature__ = inspect.Signature([*params, request_param])  # type: ignore[attr-defined]
        run.__annotations__ = {**getattr(fn, "__annotations__", {}), "request": gr.Request}
        del run.__wrapped__  # Gradio must see the signature above, with the request
        return run

    return wrap
