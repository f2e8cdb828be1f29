"""``team``: labelling as a team from the command line, over :mod:`app.services.labelling.team` —
``assign`` unlabelled utterances to annotators with an overlap, print the ``agreement`` on the
overlap as a table, ``export`` every annotator's answer as JSONL; and ``members``: who sees a
project, with which role there (:mod:`app.services.projects.members`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.access.actions import ASSIGN, EXPORT, MANAGE_MEMBERS, READ
from app.cli.common import CliError, acts, context, project, whole

WORST = 10  # intents shown in the agreement table, lowest agreement first


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``team assign|agreement|export`` on the main parser's subcommands."""
    p = sub.add_parser(
        "team",
        help="labelling as a team: assign utterances to annotators, agreement, export answers",
    )
    team_sub = p.add_subparsers(dest="team_command", required=True)
    t = team_sub.add_parser(
        "assign",
        help="split the unlabelled utterances nobody has yet between annotators (designers), "
        "an evenly spread share of them (--overlap) to two",
    )
    t.add_argument("project")
    t.add_argument("--annotators", required=True, help="user names, comma-separated: ana,ben")
    t.add_argument("--overlap", type=float, default=0.1, help="share labelled twice (0.1)")
    t.add_argument("--search", help="only utterances containing this text")
    t.add_argument("--limit", type=whole("limit"), help="only the first N of them")
    t.set_defaults(func=cmd_team_assign)
    t = team_sub.add_parser(
        "agreement",
        help="agreement on the overlap: Cohen's kappa per pair, Krippendorff's alpha, "
        f"the {WORST} intents annotators agree on least",
    )
    t.add_argument("project")
    t.set_defaults(func=cmd_team_agreement)
    t = team_sub.add_parser("export", help="every annotator's answer, one JSON object a line")
    t.add_argument("project")
    t.add_argument("output", help="the .jsonl to write")
    t.set_defaults(func=cmd_team_export)

    p = sub.add_parser(
        "members",
        help="who sees a project: list its members, add a user with a role there, or remove one",
        description="Admins see every project; anyone else sees only the projects they are a "
        "member of, with their role there (never above their own). Each change is recorded in "
        "the security log.",
    )
    p.add_argument("action", choices=["list", "add", "remove"])
    p.add_argument("name", nargs="?", help="the user (add, remove)")
    p.add_argument("--project", required=True)
    p.add_argument(
        "--role", choices=["viewer", "designer"], help="for add (default: the user's own role)"
    )
    p.set_defaults(func=cmd_members)


@acts(ASSIGN)
def cmd_team_assign(args: argparse.Namespace) -> int:
    from app.services.labelling import team

    names = [n for n in args.annotators.split(",") if n.strip()]
    serving_state = context(args)
    given = team.assign(
        serving_state.db,
        project(serving_state, args.project, ASSIGN),
        names,
        overlap=args.overlap,
        search=args.search,
        limit=args.limit,
    )
    shared = given.pop("overlap")
    if not any(given.values()):
        print(f"Nothing assigned: {args.project!r} has no unlabelled utterance nobody has yet.")
        return 0
    each = ", ".join(f"{name} {n}" for name, n in given.items())
    print(f"Assigned in {args.project!r}: {each}; {shared} to two annotators (the overlap).")
    return 0


def _value(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


@acts(READ)
def cmd_team_agreement(args: argparse.Namespace) -> int:
    from app.services.labelling import team_answers

    serving_state = context(args)
    found = team_answers.measure(serving_state.db, project(serving_state, args.project, READ))
    if not found.items:
        print(f"No agreement yet in {args.project!r}: no overlap item has two answers.")
        return 0
    print(
        f"{found.items} overlap item(s) answered twice or more, {len(found.disputed)} disputed; "
        f"Krippendorff's alpha {_value(found.alpha)} (MASI {_value(found.alpha_masi)})"
    )
    print()
    print(f"{'annotators':30} {'items':>6} {'agreed':>7} {'kappa':>7}")
    for p in found.pairs:
        print(f"{p.a + ' / ' + p.b:30} {p.items:>6} {p.agreed:>7} {_value(p.kappa):>7}")
    print()
    print(f"Lowest agreement ('-': undefined), at most {WORST} intents:")
    print(f"{'intent':30} {'items':>6} {'statistic':>9} {'value':>7} {'disputed':>8}")
    for i in found.intents[:WORST]:
        print(
            f"{i.intent:30} {i.items:>6} {i.statistic:>9} {_value(i.value):>7} {len(i.disputed):>8}"
        )
    return 0


@acts(EXPORT)
def cmd_team_export(args: argparse.Namespace) -> int:
    from app.services.labelling import team_answers

    serving_state = context(args)
    out = team_answers.export_answers(
        serving_state.db, project(serving_state, args.project, EXPORT), Path(args.output)
    )
    with out.open(encoding="utf-8") as f:
        lines = sum(1 for _ in f)
    print(f"Wrote {lines} answer(s) to {out}.")
    return 0


@acts(MANAGE_MEMBERS)
def cmd_members(args: argparse.Namespace) -> int:
    import getpass

    from app.services.projects import members

    serving_state = context(args)
    p = project(serving_state, args.project, READ if args.action == "list" else MANAGE_MEMBERS)
    if args.action == "list":
        for m in members.members(serving_state.db, p):
            state = "" if m.status == "active" else f" ({m.status})"
            print(f"{m.name:30} {m.role:9} (own role {m.user_role}){state}")
        return 0
    if not args.name:
        raise CliError(f"Give the user: intent-studio members {args.action} NAME --project ...")
    actor = f"cli:{getpass.getuser()}"
    if args.action == "add":
        print(members.add_member(serving_state.db, p, args.name, args.role, actor=actor))
    else:
        print(members.remove_member(serving_state.db, p, args.name, actor=actor))
    return 0
