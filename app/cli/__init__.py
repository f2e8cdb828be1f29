"""The ``intent-studio`` command. Subcommands import their heavy dependencies lazily, so ``--help``
is instant; each is a thin shell over the same service functions the UI uses.

``common`` (errors, context), ``server`` (serve, worker), ``model`` (train, predict, bundle, report),
``data`` (import, export, projects, users, backup, restore), ``history`` (delete, undo, activity),
``design`` (clusters), ``team`` (assign, agreement, export).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from app.cli.common import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    CliError,
    ask_table,
    close_contexts,
    leave_process,
    version_arg,
    visible_output,
    whole,
)
from app.cli.data import (
    AGENT_FORMAT_NAMES,
    cmd_audit,
    cmd_backup,
    cmd_export,
    cmd_import,
    cmd_projects,
    cmd_restore,
    cmd_users,
)
from app.cli.design import cmd_clusters
from app.cli.history import add_parser as add_history_parser
from app.cli.model import (
    cmd_bundle_export,
    cmd_bundle_import,
    cmd_predict,
    cmd_report,
    cmd_settings,
    cmd_train,
)
from app.cli.server import cmd_serve, cmd_worker
from app.cli.team import add_parser as add_team_parser
from app.limits import MAX_K
from core.method_names import METHOD_LINES

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

    p = sub.add_parser("serve", help="start the web app (and its training worker)")
    p.add_argument("--host", default=DEFAULT_HOST, help="bind address (default 127.0.0.1)")
    p.add_argument(
        "--port",
        type=whole("port", 1, 65535),
        default=int(os.environ.get("INTENT_STUDIO_PORT", DEFAULT_PORT)),
    )
    p.add_argument(
        "--no-demo", action="store_true", help="do not create the demo project on first start"
    )
    p.add_argument(
        "--no-worker", action="store_true", help="do not start a training worker beside the app"
    )
    p.add_argument(
        "--multi-user",
        action="store_true",
        help="require sign-in with roles (admin/designer/viewer); needed to bind a public address",
    )
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("worker", help="run a training worker on the job queue")
    p.add_argument(
        "--check",
        action="store_true",
        help="do not run: check that the database, queue and model store answer and that these "
        "settings agree with the app's; exit 1 if not (the worker containers' healthcheck)",
    )
    p.set_defaults(func=cmd_worker)

    p = sub.add_parser("train", help="retrain a project's encoder and print progress and metrics")
    p.add_argument("--project", required=True)
    p.add_argument(
        "--method",
        default="convfit",
        metavar="{convfit,lora}",
        help=f"convfit (the default; fast, its older name, still works) = "
        f"{METHOD_LINES['convfit']}. lora = {METHOD_LINES['lora']}.",
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="a TrainConfig field, e.g. --set epochs=2",
    )
    p.add_argument(
        "--queue", action="store_true", help="hand the job to the worker instead of training here"
    )
    p.set_defaults(func=cmd_train)

    p = sub.add_parser(
        "import",
        help="import CSV, JSONL, Rasa YAML, intent .txt files or a platform agent into a project",
    )
    p.add_argument(
        "file",
        help="CSV (text,label|labels[,split]), JSONL, Rasa NLU .yml, a folder/.zip of "
        "intent_name.txt files (one utterance per line), or an agent export: Dialogflow ES or CX "
        "(.zip or folder), Lex V2 (.zip), Watson Assistant, LUIS, CLU or Dialogflow CX (.json); "
        "the format is recognised by content and named in the output",
    )
    p.add_argument("--project", required=True)
    p.add_argument(
        "--no-create-intents", action="store_true", help="refuse labels that are not intents yet"
    )
    p.add_argument(
        "--relabel",
        action="store_true",
        help="texts already in the project get the file's labels (default: skipped, counted)",
    )
    p.add_argument(
        "--language",
        help="for an agent: the language to read (Lex: a locale id such as de_DE) instead of "
        "the agent's default; its export writes that language back",
    )
    p.set_defaults(func=cmd_import)

    p = sub.add_parser(
        "export",
        help="export a project: .csv, .jsonl, Rasa .yml, .zip or a folder (no suffix) of .txt "
        "files, or a platform agent (--format)",
    )
    p.add_argument("--project", required=True)
    p.add_argument("-o", "--output", required=True)
    p.add_argument(
        "--format",
        choices=AGENT_FORMAT_NAMES,
        help="write a platform agent (.zip: dialogflow-es, dialogflow-cx, lex-v2; .json: watson, "
        "luis, clu, dialogflow-cx-json). A project imported from an agent is written as that "
        "agent to a .zip or .json without it, with everything the app does not model kept",
    )
    p.set_defaults(func=cmd_export)
    add_history_parser(sub)

    p = sub.add_parser("predict", help="classify utterances with a project's pool or a bundle")
    p.add_argument("texts", nargs="*")
    p.add_argument("--project")
    p.add_argument("--bundle", help="a model bundle .zip (runs without the app's database)")
    p.add_argument("--input", help="file with one utterance per line ('-' = stdin)")
    p.add_argument(
        "-k",
        type=whole("number of examples per intent (k)", 1, MAX_K),
        default=1,
        help="examples per intent that make its score",
    )
    p.add_argument(
        "--context",
        help="the turn before the utterances (e.g. the bot's question); used by a project that "
        "encodes context (intent-studio context)",
    )
    p.add_argument("--format", choices=["text", "jsonl", "csv"], default="text")
    p.add_argument(
        "--show",
        type=whole("number of neighbours", 0, MAX_K),
        default=3,
        help="neighbours shown per utterance (text format)",
    )
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser(
        "settings",
        help="show a project's settings and what each does now, or change them: "
        "oos_target_recall, anchor_weight, encode_context, serve_int8",
    )
    p.add_argument("--project", required=True)
    p.add_argument(
        "--set",
        action="append",
        metavar="NAME=VALUE",
        help="e.g. oos_target_recall=0.95 (or off), anchor_weight=1 (or off), "
        "encode_context=on, serve_int8=off; repeatable",
    )
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(func=cmd_settings)

    p = sub.add_parser(
        "clusters", help="candidate intents: the project's unlabelled utterances in groups"
    )
    p.add_argument("project", nargs="?", help="the project (or --project)")
    p.add_argument("--project", dest="project_option", help=argparse.SUPPRESS)
    p.add_argument(
        "--min-size",
        type=whole("group size", 2),
        default=None,
        help="smallest group (default: by size)",
    )
    p.add_argument(
        "--examples",
        type=whole("number of examples", 0, MAX_K),
        default=3,
        help="central examples shown per group",
    )
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument("--json", dest="format", action="store_const", const="json", help="JSON")
    p.set_defaults(func=cmd_clusters)

    p = sub.add_parser("bundle", help="export a model bundle, or open one as a read-only project")
    bundle_sub = p.add_subparsers(dest="bundle_command", required=True)
    b = bundle_sub.add_parser("export", help="write a model version as a bundle .zip")
    b.add_argument("--project", required=True)
    b.add_argument(
        "--version",
        type=version_arg,
        help="model version id, or 'base' (default: the active one)",
    )
    b.add_argument("-o", "--output", required=True, help="the .zip to write")
    b.add_argument(
        "--int8",
        action="store_true",
        help="carry the encoder as int8 ONNX instead of fp32 (4x smaller; refused if it "
        "disagrees with fp32 on >1%% of the test split; cannot be opened as a project)",
    )
    b.set_defaults(func=cmd_bundle_export)
    b = bundle_sub.add_parser("import", help="open a bundle as a new read-only project")
    b.add_argument("file")
    b.add_argument("--name", help="project name (default: the bundle's project + ' (bundle)')")
    b.set_defaults(func=cmd_bundle_import)

    add_team_parser(sub)

    p = sub.add_parser("report", help="write the stakeholder report (self-contained HTML)")
    p.add_argument("--project", required=True)
    p.add_argument(
        "-o",
        "--output",
        help="the .html to write (default: a file in <data-dir>/downloads/, removed after a day)",
    )
    p.add_argument(
        "--static",
        action="store_true",
        help="no script: tables and bars instead of interactive charts, no maps (prints well)",
    )
    p.set_defaults(func=cmd_report)

    p = sub.add_parser(
        "backup",
        help="back up the database (SQLite, or PostgreSQL with pg_dump) and the model files (a "
        "folder, or a bucket's committed versions) into one archive, while the app runs",
    )
    p.add_argument("-o", "--output", required=True, help="the .tar.gz to write")
    p.set_defaults(func=cmd_backup)

    p = sub.add_parser(
        "restore",
        help="restore a backup into an empty data directory, or an empty PostgreSQL database "
        "and an empty bucket (INTENT_STUDIO_DB_URL, INTENT_STUDIO_ARTIFACTS_URL)",
    )
    p.add_argument("file", help="a .tar.gz written by `intent-studio backup`")
    p.set_defaults(func=cmd_restore)

    p = sub.add_parser(
        "users",
        help="add, remove, restore, lock or unlock users, reset a password, change roles, list "
        "users, issue a REST API token (multi-user mode)",
        description="`users token NAME` prints a new API token for NAME once (only its hash is "
        "kept; it replaces NAME's earlier token). Send it as `Authorization: Bearer TOKEN`. "
        "`revoke` ends NAME's API token only; `remove` and `lock` end NAME's sessions and token "
        "at their next request; `password` (from $INTENT_STUDIO_PASSWORD, else asked) ends the "
        "sessions signed in before it. `role NAME --role R` changes a role (without --role it "
        "says NAME's role and changes nothing). `add` refuses the name of a removed user; "
        "`restore NAME` brings that user back on purpose (a new password, the role they had "
        "unless --role). Each change, an added user and an issued token are recorded in the "
        "security log.",
    )
    p.add_argument(
        "action",
        choices=[
            "add",
            "role",
            "list",
            "token",
            "revoke",
            "remove",
            "restore",
            "lock",
            "unlock",
            "password",
        ],
    )
    p.add_argument("name", nargs="?")
    p.add_argument(
        "--role",
        choices=["viewer", "designer", "admin"],
        help="for add (default designer), restore (default: the role they had) and role "
        "(required to change it)",
    )
    p.set_defaults(func=cmd_users)

    p = sub.add_parser("projects", help="list projects (or those a user sees: --user NAME)")
    p.add_argument("--user", help="only the projects this user sees, with their role in each")
    p.set_defaults(func=cmd_projects)

    p = sub.add_parser(
        "audit",
        help="the security log, newest first: sign-ins, refused calls, account changes, "
        "exports, reports, bundles, new projects (filter with --user and --action)",
    )
    p.add_argument("--user", help="only events about this user or done by them")
    p.add_argument("--action", help="only this action (signed_in, sign_in_failed, denied, ...)")
    p.add_argument(
        "--limit", type=whole("limit"), default=100, help="at most this many (default 100)"
    )
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.set_defaults(func=cmd_audit)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Without ``argv`` it is the process's own command line (the
    ``intent-studio`` script, ``python -m app``): the process is about to exit when it returns,
    so it leaves as :func:`app.cli.common.leave_process` says; with ``argv`` (a test, a bench
    calling it in-process) the caller's process goes on."""
    with visible_output():
        return _main(argv)


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
