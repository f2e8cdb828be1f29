"""Which job a worker runs when a queue message wakes it (issue 73 item 6): the fairest queued
one (:func:`storage.job_order.fairest_queued`: a request someone made before every automatic
one, users in turn, then first asked), not always the one the message names. The message only
wakes a worker; the job row is the truth (docs/internals.md, "The training queue").

Every queued job keeps a message of its own, so the lost-message rule
(:func:`storage.job_reaper.reap_lost_jobs`) holds as it did: a worker that takes another job
than its message's queues that message again first (as a stopping worker does with the job it
hands back), and a message whose job is no longer queued (taken in another's turn, cancelled)
wakes a worker for the fairest job all the same, whose own message then finds it taken. The
claim is the same ``UPDATE … WHERE status = 'queued'``: exactly once, a cancelled job never
starts.
"""

from __future__ import annotations

import logging

from app.serving.state import ServingState
from app.worker.stopping import StopRequest
from core.errors import raise_if_bug
from storage import jobs
from storage.errors import NotFoundError
from storage.job_order import fairest_queued

logger = logging.getLogger(__name__)


def take_turn(serving_state: ServingState, woken_by: int, stop: StopRequest | None = None) -> int:
    """The job to run for the message of job ``woken_by`` (that one, unless another's turn
    comes first); a stopping worker runs nothing new, so it keeps the message's job (which
    :func:`app.worker.execute_job` queues again)."""
    if stop is not None and stop.requested:
        return woken_by
    with serving_state.db.session() as s:
        fairest = fairest_queued(s)
        try:
            waiting = jobs.get_job(s, woken_by).status == "queued"
        except NotFoundError:  # its project was deleted since
            waiting = False
    if fairest is None or fairest == woken_by:
        return woken_by
    if waiting:  # it keeps its place: a message of its own, at the queue's end
        try:
            assert serving_state.training.enqueue is not None, "a worker's context has its queue"
            serving_state.training.enqueue(woken_by)
        except Exception as exc:  # the queue's server away: this message's job, as before
            logger.warning("job %s runs in its own turn: the queue did not take it back", woken_by)
            raise_if_bug(exc)
            return woken_by
    logger.info("job %s's turn comes first (woken by job %s)", fairest, woken_by)
    return fairest
