"""``clusters``: candidate intents from a project's unlabelled utterances, as the Design tab
shows them (:func:`app.services.design.clusters.candidate_intents`), printed as a table or JSON."""

from __future__ import annotations

import argparse
import json
from typing import Any

from app.access.actions import READ
from app.cli.common import CliError, acts, context, project, whole
from app.limits import MAX_K

EXAMPLES = 3  # central examples per cluster in the table


@acts(READ)
def cmd_clusters(args: argparse.Namespace) -> int:
    """Print the candidate intents of a project, most coherent first."""
    from app.services.design.clusters import candidate_intents

    name = args.project or args.project_option
    if not name:
        raise CliError("Give the project: intent-studio clusters PROJECT.")
    serving_state = context(args)
    found = candidate_intents(
        serving_state.live, project(serving_state, name, READ), min_size=args.min_size
    )
    if args.format == "json":
        print(json.dumps([_as_dict(c, args.examples) for c in found], ensure_ascii=False))
        return 0
    if not found:
        print(f"No candidate intents in {name!r}: the unlabelled utterances form no group.")
        return 0
    print(
        f"{len(found)} candidate intent(s) in {name!r}: the new ones first, then those the model "
        "already puts in an existing intent; each most coherent first:"
    )
    print(
        f"{'#':>3} {'coherent':>8} {'size':>5}  {'words':28} {'already an intent?':30} "
        f"{'nearest intent':30} central examples"
    )
    for c in found:
        near = f"{c.nearest_intent} ({c.nearest_similarity:.2f})" if c.nearest_intent else "-"
        like = f"≈ {c.looks_like}" if c.resembles else "no: new"
        examples = " | ".join(_short(t) for t in c.texts[: args.examples])
        print(
            f"{c.number:>3} {c.coherence:>8} {c.size:>5}  {_short(c.title, 28):28} "
            f"{_short(like, 30):30} {_short(near, 30):30} {examples}"
        )
    return 0


def _as_dict(c: Any, examples: int) -> dict[str, Any]:
    return {
        "number": c.number,
        "size": c.size,
        "title": c.title,
        "suggested_name": c.suggested_name,
        "keywords": list(c.keywords),
        "nearest_intent": c.nearest_intent,
        "nearest_similarity": round(float(c.nearest_similarity), 4),
        "resembles": list(c.resembles),
        "resembling": c.resembling,
        "cohesion": round(float(c.cohesion), 4),
        "examples": list(c.texts[:examples]),
        "ids": list(c.ids),
    }


def _short(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def add_parser(sub: Any) -> None:
    """This module's commands on the ``intent-studio`` parser (``sub``: its subparsers)."""
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
