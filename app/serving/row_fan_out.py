"""A team's workers encode a project's rows (issue 72 item 5): the background of
:mod:`app.serving.row_encoding` hands its chunks to the training queue
(:attr:`~app.serving.row_encoding.RowSpaces.fan_out`, :mod:`app.worker.encoding` runs them),
:data:`~app.serving.row_encoding.IN_FLIGHT` at a time, and adds the vectors the workers wrote
to the shared embedding cache (a folder, or the bucket's ``vectors/``) as they come. A row the
cache holds already is added without being sent; a chunk no worker did within
:data:`~app.serving.row_encoding.RESEND_S` is sent again (its worker died, the queue lost it)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from app.serving.live import LivePools
from app.serving.pools import ProjectPool
from app.serving.row_plan import Plan
from app.serving.row_progress import RowProgress
from app.serving.row_spaces import ProjectRows, RowSpace

# Sends a chunk to the workers: project id, space fingerprint, context or not, row ids.
FanOut = Callable[[int, str, bool, list[int]], None]


class Collects(Protocol):
    """What a fan-out step needs of :class:`app.serving.row_encoding.RowSpaces`."""

    live: LivePools
    fan_out: FanOut | None
    progress: RowProgress

    def adopt(
        self, rows: ProjectRows, pool: ProjectPool, space: RowSpace, ids: list[int]
    ) -> int: ...


def _collect(
    spaces: Collects, rows: ProjectRows, pool: ProjectPool, space: RowSpace, ids: list[int]
) -> list[int]:
    """Add the rows of ``ids`` whose vectors the cache holds; the ids it does not hold yet."""
    spaces.adopt(rows, pool, space, ids)
    return space.missing(rows, [i for i in ids if i in rows.texts])


def fan_out_step(
    spaces: Collects,
    rows: ProjectRows,
    pool: ProjectPool,
    space: RowSpace,
    plan: Plan,
    *,
    chunk: int,
    most: int,
    resend: float,
) -> bool:
    """Pick up what the workers wrote, send chunks of ``chunk`` rows again (out longer than
    ``resend`` seconds) or anew (up to ``most`` out); whether any is still out."""
    assert spaces.fan_out is not None
    now = time.monotonic()
    if plan.sent:
        spaces.live.cache.pick_up(space.fingerprint, space.dim)
        added = 0
        for number, (ids, sent_at) in list(plan.sent.items()):
            left = _collect(spaces, rows, pool, space, ids)
            added += len(ids) - len(left)
            if not left:
                del plan.sent[number]
            elif now - sent_at > resend:
                spaces.fan_out(space.project_id, space.fingerprint, space.use_context, left)
                plan.sent[number] = (left, now)
            else:
                plan.sent[number] = (left, sent_at)
        if added:  # the workers' speed: rows a second between two pick-ups that found some
            spaces.progress.chunk(space.project_id, added, now - (plan.picked_at or now - 1.0))
            plan.picked_at = now
    while len(plan.sent) < most and plan.todo:
        ids, plan.todo = plan.todo[:chunk], plan.todo[chunk:]
        ids = _collect(spaces, rows, pool, space, space.missing(rows, ids))
        if ids:
            spaces.fan_out(space.project_id, space.fingerprint, space.use_context, ids)
            plan.sent[plan.next_chunk] = (ids, time.monotonic())
            plan.next_chunk += 1
            plan.picked_at = plan.picked_at or time.monotonic()
    return bool(plan.sent or plan.todo)
