"""A worker stopped in any phase of a job loses nothing (issue 64 item 6): SIGTERM while its job
was preparing (waiting for the worker's warm-up) abandoned the job; now, whatever the job was
doing, it ends within the grace with its version, or goes back to the queue and is completed
once by the next worker, and the worker's job thread returns in seconds. The stop is the
worker's own (:class:`app.worker.stopping.StopRequest`), asked as the job enters each phase,
with no grace left; the int8 copy's and the held-out calibration's phases have their own tests
(tests/app/test_training_service.py, tests/app/test_compute_budget.py)."""

from __future__ import annotations

import time

import pytest

from app import worker
from app.services.models import versions as version_svc
from app.services.training import retrain_jobs as svc
from app.services.training.retrain_warm import warm_up_worker
from app.worker.stopping import StopRequest
from tests.handles import live
from tests.samples import make_tiny

pytestmark = pytest.mark.slow

# a first pass of 4 steps, then 8 more (TINY: 16 train utterances)
ANYTIME = {"method": "convfit", "epochs": 3, "batch_size": 8}


def stopping_at(phase: str, nth: int):
    """The worker's reporter, whose worker is asked to stop (no grace left) as the job enters
    ``phase`` for the ``nth`` time (``preparing``: once the job has read its data)."""

    class StoppedThere(worker.JobReporter):
        seen = 0

        def _enter(self, entered: str) -> None:
            if entered == phase:
                type(self).seen += 1
                if type(self).seen == nth and self.worker_stop is not None:
                    self.worker_stop.request(grace=0.0)

        def plan(self, plan) -> None:
            super().plan(plan)
            self._enter("preparing")

        def log(self, line, *, phase=None) -> None:
            super().log(line, phase=phase)
            if phase is not None:
                self._enter(phase)

    return StoppedThere


@pytest.mark.parametrize(
    ("phase", "nth"),
    [
        ("preparing", 1),  # waiting for the worker's warm-up
        ("training", 1),
        ("saving", 1),
        ("evaluating", 1),
        ("serving", 1),  # the first pass registered: its version serves
        ("training", 2),  # improving it
        ("evaluating", 2),  # measuring the last checkpoint
        ("registering", 1),  # the version's record completed
    ],
    ids=lambda v: str(v),
)
def test_a_job_stopped_in_any_phase_ends_or_goes_back_and_is_done_once(
    serving_state, tiny_encoder, monkeypatch, phase, nth
) -> None:
    make_tiny(serving_state, encoder=tiny_encoder)  # the phases' code, not what the model learns
    stop = StopRequest()  # the worker's: its warm-up obeys it too
    steps = 400 if phase == "preparing" else 0  # a warm-up the job would wait for
    warming = warm_up_worker(
        serving_state.live,
        serving_state.models.budget,
        steps=steps,
        bases=[tiny_encoder],
        stopping=lambda: stop.requested,
    )
    if phase != "preparing":
        warming.join(120)
    view, _ = svc.request_retrain(
        serving_state.training, live(serving_state, "tiny"), ANYTIME, enqueue=False
    )
    monkeypatch.setattr(worker, "JobReporter", stopping_at(phase, nth))
    began = time.monotonic()
    worker.execute_job(serving_state, view.id, stop)
    took = time.monotonic() - began
    assert stop.requested, "the phase was never reached"
    assert took < 30, f"the stopped job took {took:.0f} s to give its thread back"
    stopped = svc.job(serving_state.training, view.id)
    assert stopped.status in ("queued", "succeeded"), stopped.log
    if stopped.status == "queued":  # handed back: the next worker completes it, once
        assert view.id in serving_state.training.enqueue.pending()
        monkeypatch.setattr(worker, "JobReporter", worker.reporter.JobReporter)
        worker.execute_job(serving_state, view.id, StopRequest())
    done = svc.job(serving_state.training, view.id)
    assert done.status == "succeeded", done.log
    history = version_svc.history(serving_state.db, live(serving_state, "tiny"))
    assert [h["version"] for h in history] == [done.model_version_id]  # one version, one job
    warming.join(10)
    assert not warming.is_alive()  # a stopped worker's warm-up stops too


def test_a_job_stopped_while_it_prepares_goes_back_at_its_next_check(
    serving_state, tiny_encoder, monkeypatch
) -> None:
    """Issue 73 item 12: a job preparing when its worker was asked to stop went on until the
    grace was over (its time left unknown), at load 63 s and more, past Huey's shutdown
    timeout; it has all its training ahead and has made nothing, so it goes back at its next
    check (its data read, before the encoders load), long before the grace ends."""
    make_tiny(serving_state, encoder=tiny_encoder)
    stop = StopRequest()
    grace = 120.0

    class StoppedAsItStarts(worker.JobReporter):  # SIGTERM as the job was claimed
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            stop.request(grace=grace)

    view, _ = svc.request_retrain(
        serving_state.training, live(serving_state, "tiny"), ANYTIME, enqueue=False
    )
    monkeypatch.setattr(worker, "JobReporter", StoppedAsItStarts)
    began = time.monotonic()
    worker.execute_job(serving_state, view.id, stop)
    took = time.monotonic() - began
    back = svc.job(serving_state.training, view.id)
    assert back.status == "queued" and "queued again" in back.message, back.log
    assert "training" not in back.log and took < grace / 4, (took, back.log)
    assert view.id in serving_state.training.enqueue.pending()
    assert version_svc.history(serving_state.db, live(serving_state, "tiny")) == []


def test_a_job_waiting_for_the_warm_up_stops_waiting_when_its_worker_stops() -> None:
    """The wait that abandoned jobs: a job waited up to 300 s for the worker's warm-up, which a
    stop did not end (Huey's shutdown timeout fired first, the job was reaped as failed)."""
    from app.services.training import retrain_warm
    from core.training import TrainingCancelled

    retrain_warm._idle.clear()  # a warm-up under way, which nothing ends
    try:
        asked = time.monotonic() + 0.5
        began = time.monotonic()
        with pytest.raises(TrainingCancelled, match="warmed up"):
            retrain_warm.wait_until_warm(should_cancel=lambda: time.monotonic() > asked)
        assert time.monotonic() - began < 2
        assert not retrain_warm.wait_until_warm(timeout=0.3)  # no stop: it waits, then says so
    finally:
        retrain_warm._idle.set()
