"""``import``, ``export``, ``projects``, ``users``, ``audit``, ``backup`` and ``restore``: the data."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from app.access.actions import EXPORT, IMPORT, MANAGE_USERS, OPERATE, READ, READ_SECURITY_LOG
from app.cli.common import CliError, acts, context, project, whole

# The agent formats ``export --format`` offers: app.formats.AGENT_FORMATS' names, written out so
# that ``--help`` does not import the formats (a test keeps the two the same).
AGENT_FORMAT_NAMES = (
    "lex-v2",
    "dialogflow-cx",
    "dialogflow-es",
    "luis",
    "clu",
    "dialogflow-cx-json",
    "watson",
)


@acts(IMPORT)
def cmd_import(args: argparse.Namespace) -> int:
    from app.access.auth import LOCAL, acting_as
    from app.services.projects.io import destination, import_file

    serving_state = context(args)
    with acting_as(LOCAL):
        into = destination(
            serving_state.db, args.project
        )  # a project that does not exist: a new one
    result = import_file(
        serving_state.db,
        into,
        args.file,
        create_missing_intents=not args.no_create_intents,
        on_existing="relabel" if args.relabel else "skip",
        language=args.language,
    )
    print(result.message())
    return 0


@acts(EXPORT)
def cmd_export(args: argparse.Namespace) -> int:
    from app.services.projects.export import export_project

    serving_state = context(args)
    result = export_project(
        serving_state.db,
        project(serving_state, args.project, EXPORT),
        args.output,
        format=args.format,
    )
    print(result.message(args.output))
    return 0


@acts(OPERATE)
def cmd_backup(args: argparse.Namespace) -> int:
    from app.config import load_settings
    from app.services.projects.backup import PG_DUMP, backup_deployment

    settings = load_settings(args.data_dir, args.db_url)
    manifest = backup_deployment(settings, Path(args.output))
    files = manifest["files"]
    database = "PostgreSQL database" if PG_DUMP in files else "database"  # type: ignore[operator]
    where = settings.artifacts_url if settings.artifacts_remote else "the model folder"
    print(
        f"Backed up the {database} and {len(files) - 1} model file(s) from {where} to "  # type: ignore[arg-type]
        f"{args.output}."
    )
    return 0


@acts(OPERATE)
def cmd_restore(args: argparse.Namespace) -> int:
    from app.config import load_settings
    from app.services.projects.backup import restore_deployment

    settings = load_settings(args.data_dir, args.db_url)
    manifest = restore_deployment(Path(args.file), settings)
    where = "the database" if settings.db_url else str(settings.data_dir)
    print(f"Restored the backup of {manifest['created_at']} into {where}.")
    return 0


def _password(name: str) -> str:
    password = os.environ.get("INTENT_STUDIO_PASSWORD")
    if password is None:
        import getpass

        password = getpass.getpass(f"Password for {name}: ")
    return password


def _cli_actor() -> str:
    """Who runs the command, for the security log: ``cli:<login name>``."""
    import getpass

    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        return "cli"


@acts(MANAGE_USERS)
def cmd_users(args: argparse.Namespace) -> int:
    from app.access.auth import add_user, issue_token
    from app.services.projects import accounts
    from storage.users import list_users

    serving_state = context(args)
    if args.action == "list":
        with serving_state.db.session() as s:
            for u in list_users(s):
                print(f"{u.name}\t{u.role}\t{u.status}")
        return 0
    if not args.name:
        raise CliError("Give the user's name.")
    if args.action == "add":
        role = args.role or "designer"
        who = add_user(serving_state.db, args.name, role, _password(args.name), actor=_cli_actor())
        print(f"Added {who.name} ({who.role}).")
        return 0
    if args.action == "restore":
        role = accounts.restore_user(
            serving_state.db, args.name, _password(args.name), actor=_cli_actor(), role=args.role
        )
        print(f"Restored {args.name} ({role}): they sign in with the new password; no API token.")
        return 0
    if args.action == "remove":
        accounts.remove_user(serving_state.db, args.name, actor=_cli_actor())
        print(f"Removed {args.name}: their sessions and API token have ended.")
        return 0
    if args.action in ("lock", "unlock"):
        locked = args.action == "lock"
        accounts.lock_user(serving_state.db, args.name, actor=_cli_actor(), locked=locked)
        print(
            f"Locked {args.name}: their sessions and API token have ended; they cannot sign in."
            if locked
            else f"Unlocked {args.name}: they can sign in again (their API token works again)."
        )
        return 0
    if args.action == "password":
        accounts.set_password(serving_state.db, args.name, _password(args.name), actor=_cli_actor())
        print(f"New password for {args.name}: their sessions signed in before have ended.")
        return 0
    if args.action == "token":
        token = issue_token(serving_state.db, args.name, actor=_cli_actor())
        print(f"API token for {args.name} (shown once; any earlier token stops working):")
        print(token)
        return 0
    if args.action == "revoke":
        accounts.revoke_token(serving_state.db, args.name, actor=_cli_actor())
        print(f"Revoked {args.name}'s API token: it stops working at its next request.")
        return 0
    if args.role is None:  # `users role NAME`: says the role, changes nothing
        current = accounts.role_of(serving_state.db, args.name)
        raise CliError(
            f"{args.name}'s role is {current}; nothing was changed. "
            "Give the new one with --role viewer|designer|admin."
        )
    accounts.set_role(serving_state.db, args.name, args.role, actor=_cli_actor())
    print(f"{args.name} is now a {args.role}.")
    return 0


@acts(READ)
def cmd_projects(args: argparse.Namespace) -> int:
    """The projects, or (``--user NAME``) those NAME sees, with NAME's role in each."""
    from app.access import open_project, visible_projects
    from app.access.auth import LOCAL
    from app.services.projects.members import actor_of
    from app.services.projects.projects import summary
    from app.serving.row_progress import encoding_line

    serving_state = context(args)
    who = actor_of(serving_state.db, args.user) if args.user else LOCAL
    names = visible_projects(serving_state.db, who)
    if args.user and not names:
        print(f"{args.user} sees no project: add them to one (intent-studio members add).")
    for name in names:
        p = open_project(serving_state.db, name, who)
        role = f" · {args.user} is {p.role} here" if args.user else ""
        found = summary(serving_state.db, p, serving_state.live)
        print(found.headline() + role)
        if found.encoding is not None:  # the server's background encoding (issue 72)
            print(f"  {encoding_line(found.encoding)}")
    return 0


@acts(READ_SECURITY_LOG)
def cmd_audit(args: argparse.Namespace) -> int:
    """The security log, newest first, filtered by user and action (tab-separated, or JSON
    lines with ``--json``)."""
    import json

    from app.services.projects.accounts import ACTIONS, COLUMNS, security_log

    if args.action and args.action not in ACTIONS:
        raise CliError(f"Unknown action {args.action!r}: use one of {', '.join(ACTIONS)}.")
    rows = security_log(context(args).db, args.limit, user=args.user, action=args.action)
    for row in rows:
        at = f"{row['at']:%Y-%m-%d %H:%M:%S}"
        if args.json:
            print(json.dumps({**row, "at": at}, ensure_ascii=False))
        else:
            print("\t".join([at, *(str(row[c]) for c in COLUMNS[1:])]))
    if not rows and not args.json:
        print("No event in the security log matches.", file=sys.stderr)
    return 0


def add_parser(sub: Any) -> None:
    """This module's commands on the ``intent-studio`` parser (``sub``: its subparsers)."""
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
