"""A team's workers encode a large project's rows with the server (issue 72 item 5): a task of
the training queue beside the training jobs (:data:`TASK_NAME`), each message one chunk of rows
of one space that the server's background hands out (:mod:`app.serving.row_fan_out`). The worker
encodes the chunk with the encoder that serves the project (its int8 copy on a CPU) and writes
the vectors to the shared embedding cache, one shard (and the bucket's copy), without keeping
them: its memory does not grow with the project. A chunk of a space that no longer serves the
project (a newer version serves) is left: the server plans the new space's chunks itself.

The queue only carries the chunk: the server knows which rows it waits for and sends a chunk
again when no worker did it in time, so a lost message or a killed worker costs one chunk."""

from __future__ import annotations

import logging
import os
import weakref
from typing import TYPE_CHECKING, Any

from app.config import Settings
from core.encoding.previous_turn import with_context
from storage.errors import NotFoundError
from storage.row_texts import row_texts
from storage.versions import active_version

if TYPE_CHECKING:
    from huey import Huey

    from app.serving.row_encoding import FanOut
    from app.serving.state import ServingState

logger = logging.getLogger(__name__)

TASK_NAME = "encode_rows"
ENV_ENCODE_ON = "INTENT_STUDIO_ENCODE_ON"


def encode_rows(
    serving_state: ServingState,
    project_id: int,
    fingerprint: str,
    use_context: bool,
    ids: list[int],
) -> int:
    """Encode the rows ``ids`` of the project in the space ``fingerprint`` (with their turn
    before when ``use_context``) into the shared embedding cache; how many were encoded (0:
    the project is gone, or another space serves it now)."""
    from app.access import open_project
    from app.access.auth import LOCAL

    try:
        p = open_project(serving_state.db, project_id, LOCAL)
    except NotFoundError:
        return 0
    with serving_state.db.session() as s:
        mv = active_version(s, project_id)
        texts = row_texts(s, project_id, ids)
    encoder = serving_state.models.serving_encoder(mv, p.base_encoder, p.settings)
    if encoder.fingerprint != fingerprint:
        logger.info("rows of %s: space %s no longer serves it; left", p.name, fingerprint)
        return 0
    found = [texts[i] for i in ids if i in texts]
    batch = [with_context(t, c) if use_context else t for t, c in found]
    return serving_state.live.cache.write_through(encoder, batch)


_TASKS: weakref.WeakKeyDictionary[Huey, Any] = weakref.WeakKeyDictionary()


def register(huey: Huey, settings: Settings) -> Any:
    """The task on ``huey`` (:func:`app.worker.make_queue` registers it on every queue it
    makes, for its producers and its consumer); returns it."""
    if huey in _TASKS:
        return _TASKS[huey]

    def encode_task(project_id: int, fingerprint: str, use_context: bool, ids: list[int]) -> None:
        from app.worker import _worker_context

        encode_rows(_worker_context(settings), project_id, fingerprint, use_context, ids)

    task = _TASKS[huey] = huey.task(name=TASK_NAME)(encode_task)
    return task


def fan_out_for(settings: Settings) -> FanOut | None:
    """Who encodes a server's rows: its team's workers (:func:`sender`) when the queue is a
    team's (Redis: workers on other machines, each with cores of its own), else the server's
    own background thread (None). ``INTENT_STUDIO_ENCODE_ON`` (``workers`` or ``server``)
    decides otherwise, e.g. local workers given CPU quotas of their own."""
    chosen = os.environ.get(ENV_ENCODE_ON, "").strip().lower()
    if chosen not in ("", "workers", "server"):
        raise ValueError(f"{ENV_ENCODE_ON} must be workers or server, not {chosen!r}.")
    workers = chosen == "workers" or (not chosen and settings.queue_url is not None)
    return sender(settings) if workers else None


def sender(settings: Settings) -> FanOut:
    """What the server's background hands a chunk to: the queue's message for the workers."""
    from app.worker import make_queue

    huey, _ = make_queue(settings)
    task = register(huey, settings)

    def send(project_id: int, fingerprint: str, use_context: bool, ids: list[int]) -> None:
        task(project_id, fingerprint, use_context, list(ids))

    return send
