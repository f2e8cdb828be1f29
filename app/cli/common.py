"""What every subcommand shares: the user-error type and the app context of a data directory."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.access import ProjectHandle
    from app.serving.context import AppContext

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7860


class CliError(Exception):
    """A user error: printed as one message, exit status 2."""


# The contexts a command opened: :func:`close_contexts` closes them when it returns, so its
# background threads (a multi-label head's fit, a calibration) stop before the interpreter does
# (torch cut off on another thread at exit aborts the process: exit 134, issue 45 row 6).
_opened: list[AppContext] = []


def context(args: argparse.Namespace) -> AppContext:
    from app.config import load_settings
    from app.serving.context import AppContext

    ctx = AppContext(load_settings(args.data_dir, args.db_url))
    _opened.append(ctx)
    return ctx


def close_contexts() -> None:
    """Close every context a command opened (its background work stopped and waited for)."""
    while _opened:
        _opened.pop().close()


def project(ctx: AppContext, name: str | None, need: str = "viewer") -> ProjectHandle:
    """The project ``name`` as the command line uses it: the operator on the server acts as the
    local admin (:func:`app.access.open_project`)."""
    from app.access import open_project
    from app.access.auth import LOCAL

    if not name:
        raise CliError("Give the project: --project NAME.")
    return open_project(ctx.db, name, LOCAL, need=need)
