"""The ``intent-studio`` command. Subcommands import their heavy dependencies lazily, so ``--help``
is instant; each is a thin shell over the same service functions the UI uses.

``common`` (errors, context), ``server`` (serve, worker), ``model`` (train, predict, bundle, report),
``data`` (import, export, projects, users, backup, restore), ``history`` (delete, undo, activity),
``design`` (clusters), ``team`` (assign, agreement, export), ``versions`` (list, pin, unpin,
remove, prune).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from app.cli.common import CliError, ask_table, close_contexts, leave_process, visible_output
from app.cli.data import add_parser as add_data_parser
from app.cli.design import add_parser as add_design_parser
from app.cli.history import add_parser as add_history_parser
from app.cli.model import add_parser as add_model_parser
from app.cli.server import add_parser as add_server_parser
from app.cli.team import add_parser as add_team_parser
from app.cli.versions import add_parser as add_versions_parser
from app.perimeter.private_data import keep_private

__all__ = ["CliError", "build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="intent-studio",
        description="Design a chatbot's intents: label examples, retrain, explain predictions.",
    )
    parser.add_argument(
        "--data-dir", help="data directory (default $INTENT_STUDIO_DATA_DIR or ./.intent-studio)"
    )
    parser.add_argument(
        "--db-url", help="SQLAlchemy database URL (default: SQLite in the data directory)"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log more")
    sub = parser.add_subparsers(dest="command", required=True)
    # each command group adds its own commands (the modules that run them)
    for add in (
        add_server_parser,
        add_model_parser,
        add_data_parser,
        add_history_parser,
        add_design_parser,
        add_team_parser,
        add_versions_parser,
    ):
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Without ``argv`` it is the process's own command line (the
    ``intent-studio`` script, ``python -m app``): the process is about to exit when it returns,
    so it leaves as :func:`app.cli.common.leave_process` says; with ``argv`` (a test, a bench
    calling it in-process) the caller's process goes on. Whatever the command writes is its
    account's alone (:func:`app.perimeter.private_data.keep_private`; a caller's own umask comes
    back after)."""
    before = keep_private()
    try:
        with visible_output():
            return _main(argv)
    finally:
        if argv is not None:
            os.umask(before)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # Idle OpenMP threads sleep instead of spinning: the app, the worker and UMAP share 2 cores.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from core.bundle.onnx import OnnxParityError
    from core.bundle.safety import BundleError
    from storage.errors import ArtifactsUnavailable, DatabaseUnavailable, StorageError

    try:
        ask_table(args.func)  # the action the command declares, asked of whoever runs it
        return int(args.func(args))
    except (
        CliError,
        StorageError,
        BundleError,
        OnnxParityError,
        ValueError,
        PermissionError,
        FileNotFoundError,
    ) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (DatabaseUnavailable, ArtifactsUnavailable) as exc:  # a server down: try again later
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        close_contexts()
        if argv is None:
            leave_process()
