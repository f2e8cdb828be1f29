"""``versions``: a project's model versions with the disk their files use (``list``), pin and
unpin one, remove one's files by hand (``remove``), and apply the retention rule now
(``prune``; it also runs after every job), over the services the Train tab's Versions section
uses (:mod:`app.services.models.version_files`). The command line acts as the local admin
(:func:`app.cli.common.project`)."""

from __future__ import annotations

import argparse
import json

from app.access.actions import READ, TRAIN
from app.cli.common import acts, context, project, version_arg

# The list's columns (the history's keys), tab-separated.
COLUMNS = ("version", "active", "trigger", "accuracy", "disk_bytes", "files", "created", "note")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``versions`` and its commands on the main parser's subcommands."""
    p = sub.add_parser(
        "versions",
        help="a project's model versions and the disk their files use; pin, unpin, remove "
        "files, apply the retention rule",
        description="The retention rule keeps the files of the active version, the newest "
        "keep_versions (a project setting, `settings --set keep_versions=N`) and every version "
        "pinned, activated by hand or exported; it runs after every retrain, or now with "
        "`versions prune`.",
    )
    versions_sub = p.add_subparsers(dest="versions_command", required=True)
    v = versions_sub.add_parser(
        "list",
        help="the versions, newest first, one tab-separated line each: "
        + ", ".join(COLUMNS)
        + "; then the disk they use",
    )
    v.add_argument("--project", required=True)
    v.add_argument("--format", choices=("text", "json"), default="text")
    v.set_defaults(func=cmd_list)
    for name, func, says in (
        ("pin", cmd_pin, "pin a version: it keeps its files whatever else the rule says"),
        ("unpin", cmd_unpin, "unpin a version: the rule may remove its files"),
        ("remove", cmd_remove, "remove a version's files now (its row stays in the history)"),
    ):
        v = versions_sub.add_parser(name, help=says)
        v.add_argument("version", type=version_arg, help="the version's number (3 or v3)")
        v.add_argument("--project", required=True)
        v.set_defaults(func=func)
    v = versions_sub.add_parser("prune", help="apply the retention rule now")
    v.add_argument("--project", required=True)
    v.set_defaults(func=cmd_prune)


@acts(READ)
def cmd_list(args: argparse.Namespace) -> int:
    from app.services.models import version_files
    from app.services.models import versions as version_svc

    serving_state = context(args)
    p = project(serving_state, args.project, READ)
    rows = version_svc.history(serving_state.db, p)
    disk = version_files.disk_of(serving_state.db, p, serving_state.settings.version_disk_mb)
    if args.format == "json":
        print(json.dumps({"versions": rows, "disk": disk.to_dict()}, ensure_ascii=False))
        return 0
    print("\t".join(COLUMNS))
    for r in rows:
        print("\t".join("" if r[c] is None else str(r[c]) for c in COLUMNS))
    print(disk.words())
    return 0


def _number(args: argparse.Namespace) -> int:
    if not isinstance(args.version, int):
        raise ValueError("Give a trained version's number: the frozen base encoder has no files.")
    return args.version


@acts(TRAIN)
def cmd_pin(args: argparse.Namespace) -> int:
    from app.services.models import version_files

    serving_state = context(args)
    p = project(serving_state, args.project, TRAIN)
    print(version_files.pin(serving_state.db, p, _number(args)))
    return 0


@acts(TRAIN)
def cmd_unpin(args: argparse.Namespace) -> int:
    from app.services.models import version_files

    serving_state = context(args)
    p = project(serving_state, args.project, TRAIN)
    print(version_files.pin(serving_state.db, p, _number(args), pinned=False))
    return 0


@acts(TRAIN)
def cmd_remove(args: argparse.Namespace) -> int:
    from app.services.models import version_files

    serving_state = context(args)
    p = project(serving_state, args.project, TRAIN)
    print(version_files.remove_files(serving_state.db, serving_state.artifacts, p, _number(args)))
    return 0


@acts(TRAIN)
def cmd_prune(args: argparse.Namespace) -> int:
    from app.services.models import version_files

    serving_state = context(args)
    p = project(serving_state, args.project, TRAIN)
    print(version_files.prune(serving_state.db, serving_state.artifacts, p).message(p.name))
    return 0
