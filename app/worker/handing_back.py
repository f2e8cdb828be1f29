"""What a stopping worker does with the job it runs (:mod:`app.worker.stopping`): the job goes
back to the queue (:func:`hand_back`: its row queued again, then its message), from its own
thread at a check, or from the main thread once the grace is over (:func:`hand_back_overdue`);
and how a job's end is written (:func:`finish`)."""

from __future__ import annotations

import logging
import threading

from app.serving.state import ServingState
from app.worker.stopping import StopRequest, leave
from core.errors import logged, raise_if_bug
from storage import jobs
from storage.db import ROWS, Database

logger = logging.getLogger(__name__)


def finish(
    db: Database, job_id: int, status: str, message: str, version_id: int | None = None
) -> None:
    with db.write(ROWS) as s:  # the job's row locks itself: no other project's writer waits
        jobs.finish_job(s, job_id, status, message, version_id)


HANDED_BACK = (
    "the worker stopped before this job ended: queued again, it starts over when a worker takes "
    "it; the active model is unchanged"
)


# One hand-back at a time: the job's thread at its check and the main thread at the grace's end
# may both try; the second waits until the first has put the message back, then finds it done.
_handing_back = threading.Lock()


def hand_back(serving_state: ServingState, job_id: int) -> None:
    """Queue a running job again for another worker (this one is stopping): its row is queued
    again (:func:`storage.jobs.hand_back`), then its message; a queue that refuses the message
    fails the job with why."""
    with _handing_back:
        _hand_back(serving_state, job_id)


def _hand_back(serving_state: ServingState, job_id: int) -> None:
    with serving_state.db.write(ROWS) as s:  # the job's row locks itself
        if not jobs.hand_back(s, job_id, HANDED_BACK):
            job = jobs.get_job(s, job_id)
            if job.status != "running" or job.model_version_id is None:
                return  # cancelled or reaped meanwhile: its end stands
            # its version is registered and serves: the job ends, it is not trained again
            jobs.finish_job(
                s,
                job_id,
                "succeeded",
                f"v{job.model_version_id} serves; its worker stopped before the job's last "
                "phase ended",
                job.model_version_id,
            )
            return
    logger.warning("job %s handed back to the queue", job_id)
    requeue(serving_state, job_id)


def hand_back_overdue(serving_state: ServingState, stop: StopRequest) -> None:
    """The grace is over and the job's thread is still in a step that checks nothing (an
    encoder loading, a lock waited for, a download: issue 73 item 12, a job preparing at load
    27 ran past Huey's shutdown timeout and was failed as lost): its job goes back to the queue
    from here, and the process leaves at once, exit 0 (:func:`app.worker.stopping.leave`: the
    thread must write nothing more for a job that is queued again). No job running: nothing."""
    job_id = stop.running
    if job_id is None:
        return
    logger.warning("job %s did not reach a check within the grace: handed back from here", job_id)
    try:
        hand_back(serving_state, job_id)
    except Exception as exc:  # the database away: the job is failed once its heartbeat stops
        logged(logger, "could not hand job %s back", job_id)
        raise_if_bug(exc)
    finally:
        leave()


def requeue(serving_state: ServingState, job_id: int) -> None:
    try:
        assert serving_state.training.enqueue is not None, "a worker's context has its queue"
        serving_state.training.enqueue(job_id)
    except Exception as exc:  # the queue's server away: the job fails with why, not silently
        logger.exception("could not queue job %s again", job_id)
        finish(
            serving_state.db,
            job_id,
            "failed",
            f"the worker stopped and the queue did not take the job back ({type(exc).__name__}: "
            f"{exc}); nothing was trained: retrain again",
        )
        raise_if_bug(exc)  # the job failed with it; a bug is shown too
