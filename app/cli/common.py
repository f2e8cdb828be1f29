"""What every subcommand shares: the user-error type and the app context of a data directory."""

from __future__ import annotations

import argparse
from typing import Any

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7860


class CliError(Exception):
    """A user error: printed as one message, exit status 2."""


def context(args: argparse.Namespace) -> Any:
    from app.config import load_settings
    from app.context import AppContext

    return AppContext(load_settings(args.data_dir, args.db_url))


def project(ctx: Any, name: str | None, need: str = "viewer") -> Any:
    """The project ``name`` as the command line uses it: the operator on the server acts as the
    local admin (:func:`app.access.open_project`)."""
    from app.access import open_project
    from app.auth import LOCAL

    if not name:
        raise CliError("Give the project: --project NAME.")
    return open_project(ctx, name, LOCAL, need=need)
