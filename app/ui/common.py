"""Small helpers shared by the tab builders: turning service errors into messages."""

from __future__ import annotations

import html
import logging
from collections.abc import Callable
from typing import TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Errors that are the user's to fix; anything else is a bug and is logged with its traceback.
USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, KeyError, PermissionError)


def ok(message: str) -> str:
    return f"✅ {message}"


def problem(message: str) -> str:
    # Messages may quote user text; render as code so markdown/HTML in it stays inert.
    body = html.escape(message)
    return f"⚠️ <pre class='problem'>{body}</pre>"


def attempt(fn: Callable[[], T]) -> tuple[T | None, str | None]:
    """Run ``fn``; return (result, None) or (None, message) for a user error."""
    try:
        return fn(), None
    except USER_ERRORS as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        return None, str(msg)
    except Exception as exc:  # a bug: keep the app alive, log it, tell the user something useful
        logger.exception("unexpected error")
        return None, f"Unexpected error ({type(exc).__name__}): {exc}"
