"""``import``, ``export``, ``projects``, ``users``, ``audit``, ``backup`` and ``restore``: the data."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from app.access.actions import EXPORT, IMPORT, MANAGE_USERS, OPERATE, READ, READ_SECURITY_LOG
from app.cli.common import CliError, acts, context, project

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
    from app.services.projects.io import export_project

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

    serving_state = context(args)
    who = actor_of(serving_state.db, args.user) if args.user else LOCAL
    names = visible_projects(serving_state.db, who)
    if args.user and not names:
        print(f"{args.user} sees no project: add them to one (intent-studio members add).")
    for name in names:
        p = open_project(serving_state.db, name, who)
        role = f" · {args.user} is {p.role} here" if args.user else ""
        print(summary(serving_state.db, p).headline() + role)
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
