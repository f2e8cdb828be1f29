"""The order a space's rows are encoded in (issue 72 items 2 and 3): the order the designer
needs them in. First the labelled rows (they decide predictions; a new version's pool has them
already, so they come from the embedding cache), then the rows the queue would show next in
another space of the project (the one it orders in while a new version's is encoded: its most
uncertain and least covered candidates), then every other unlabelled row in a seeded spread
order (what is encoded at any moment is a sample of the whole file, a first batch included),
then the test rows."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from app.serving.row_spaces import ProjectRows, RowSpace

HINT = 2000  # rows of the space the queue orders in meanwhile encoded first in a new one


@dataclass
class Plan:
    """A space's rows still to encode (``todo``, in order) as of the table ``rows``, and the
    chunks out with a team's workers (``sent``: number -> ids and when sent)."""

    rows: ProjectRows
    todo: list[int]
    sent: dict[int, tuple[list[int], float]] = field(default_factory=dict)
    next_chunk: int = 0
    picked_at: float = 0.0  # when the workers' vectors were last picked up


def make_plan(
    rows: ProjectRows, space: RowSpace, others: list[RowSpace], known: Plan | None
) -> Plan:
    """The plan of ``space`` (see the module); ``others``: the project's other spaces (their
    queue's next rows first); ``known``: the plan before it, whose chunks out stay out."""
    missing = space.missing(rows)
    labelled = [i for i in missing if rows.split[i] == "train"]
    # the queue's next rows in another space: candidates only (a row just labelled stays in its
    # frontier until a pass checks it, and is in ``labelled`` already: never one id twice)
    hint = _hint(others, {i for i in missing if rows.split[i] == "unlabelled"})
    taken = set(labelled) | set(hint)
    spread = [i for i in missing if rows.split[i] == "unlabelled" and i not in taken]
    order = np.random.default_rng(space.project_id).permutation(len(spread))
    rest = [i for i in missing if i not in taken and rows.split[i] not in ("train", "unlabelled")]
    todo = labelled + hint + [spread[j] for j in order.tolist()] + rest
    made = Plan(rows, todo)
    if known is not None:  # the chunks out with the workers stay out
        made.sent, made.next_chunk, made.picked_at = known.sent, known.next_chunk, known.picked_at
        out = {i for ids, _ in known.sent.values() for i in ids}
        made.todo = [i for i in todo if i not in out]
    space.complete = not any(rows.split[i] == "unlabelled" for i in missing)
    space.complete_for = rows
    return made


def _hint(others: list[RowSpace], missing: set[int]) -> list[int]:
    """The rows the queue would show next in the ``others`` spaces, that are ``missing``."""
    hint: list[int] = []
    for other in others:
        with other.lock:
            f = other.frontier
            picks = np.concatenate([f.smallest_margins(HINT // 2), f.least_covered(HINT // 2)])
        hint += [i for i in picks.tolist() if i in missing]
    return list(dict.fromkeys(hint))  # a row both unsure and far from labels comes once
