"""``delete``, ``undo`` and ``activity``: one utterance deleted, a change taken back, and the
project's recent changes, over the services the Data and Activity tabs use
(:func:`app.services.labelling.data.delete_utterance`, :mod:`app.services.labelling.history`), through the same
front door (:func:`app.access.writing`: the role and the item rule). The command line acts as
the local admin (:func:`app.cli.common.project`)."""

from __future__ import annotations

import argparse

from app.access.actions import EDIT, READ, UNDO
from app.cli.common import CliError, acts, context, project, whole


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``delete``, ``undo`` and ``activity`` on the main parser's subcommands."""
    p = sub.add_parser(
        "delete",
        help="delete one utterance, by its id or its text (undo brings it back)",
        description="A test utterance is deleted only with --confirm-test: the test split "
        "measures the model, so deleting what the model gets wrong there bends the accuracy.",
    )
    p.add_argument(
        "id",
        nargs="?",
        type=whole("utterance id"),
        help="the utterance's id (as `activity` or REST list)",
    )
    p.add_argument("--text", help="the utterance's text instead of its id")
    p.add_argument("--project", required=True)
    p.add_argument("--confirm-test", action="store_true", help="a test utterance may go")
    p.set_defaults(func=cmd_delete)

    p = sub.add_parser(
        "undo",
        help="undo the last change still in effect, or one change (--batch), if later edits "
        "did not touch its rows: a delete, a bulk label, an import, a merge, a fix",
    )
    p.add_argument("--project", required=True)
    p.add_argument("--batch", help="the change to undo (its batch, as `activity` lists it)")
    p.set_defaults(func=cmd_undo)

    p = sub.add_parser(
        "activity",
        help="a project's recent changes, newest first, one tab-separated line per batch: when, "
        "user, action, rows, example, state (can be undone, undone, ...), batch",
    )
    p.add_argument("--project", required=True)
    p.add_argument("--limit", type=whole("limit"), default=20, help="how many changes (20)")
    p.set_defaults(func=cmd_activity)


@acts(EDIT)
def cmd_delete(args: argparse.Namespace) -> int:
    from app.services.labelling import data

    if (args.id is None) == (args.text is None):
        raise CliError("Give the utterance's id or --text (one of them).")
    serving_state = context(args)
    p = project(serving_state, args.project, EDIT)
    uid = args.id if args.id is not None else data.utterance_id(serving_state.db, p, args.text)
    try:
        gone = data.delete_utterance(serving_state.db, p, uid, confirm_test=args.confirm_test)
    except data.UnconfirmedTestChange as exc:
        raise CliError(f"{exc} Add --confirm-test to delete it.") from None
    print(gone.message())
    print(f"To bring it back: intent-studio undo --project {args.project!r} --batch {gone.batch}")
    return 0


@acts(UNDO)
def cmd_undo(args: argparse.Namespace) -> int:
    from app.services.labelling import history

    serving_state = context(args)
    p = project(serving_state, args.project, UNDO)
    print(
        history.undo_batch(serving_state.db, p, args.batch)
        if args.batch
        else history.undo(serving_state.db, p)
    )
    return 0


@acts(READ)
def cmd_activity(args: argparse.Namespace) -> int:
    from app.services.labelling import history

    serving_state = context(args)
    rows = history.activity(
        serving_state.db, project(serving_state, args.project, READ), limit=args.limit
    )
    for r in rows:  # tab-separated, as ACTIVITY_COLUMNS; the example quoted (no raw controls)
        cells = [r[c] if c != "example" else repr(r[c][:60]) for c in history.ACTIVITY_COLUMNS]
        print("\t".join(str(c) for c in cells))
    if not rows:
        print("No changes yet.")
    return 0
