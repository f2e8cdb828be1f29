"""Training jobs in the database (SQLite and PostgreSQL): one active job per project, an atomic
claim, cancel, progress, finish, and reaping the jobs of dead workers."""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from sqlalchemy import update

from storage import job_phases, job_reaper, jobs
from storage.errors import ConflictError, NotFoundError
from storage.projects import create_project
from storage.tables import TrainingJob, utcnow
from storage.versions import NewVersion, register_version


@pytest.fixture
def project(db):
    with db.session() as s:
        return create_project(s, "shop").id


def test_one_active_job_per_project(db, project):
    with db.session() as s:
        first, created = jobs.create_job(s, project, {"method": "fast"})
        again, created_again = jobs.create_job(s, project, {"method": "lora"})
    assert created and not created_again and again.id == first.id
    assert first.status == "queued" and first.active and first.config == {"method": "fast"}
    with db.session() as s:
        jobs.finish_job(s, first.id, "succeeded", "done")
        third, created = jobs.create_job(s, project, {})
    assert created and third.id != first.id


def test_a_job_is_claimed_once(db, project):
    with db.session() as s:
        job, _ = jobs.create_job(s, project, {})
    with db.session() as s:
        claimed = jobs.claim_job(s, job.id, pid=os.getpid())
    with db.session() as s:
        assert jobs.claim_job(s, job.id, pid=os.getpid()) is None
    assert claimed is not None and claimed.status == "running"


def test_workers_racing_for_one_job_claim_it_exactly_once(db, project):
    """Eight workers (threads, each its own connection) claim the same queued job at once."""
    import threading

    with db.session() as s:
        job, _ = jobs.create_job(s, project, {})
    start = threading.Barrier(8)
    won: list[int] = []

    def claim(worker: int) -> None:
        start.wait()
        with db.session() as s:
            if jobs.claim_job(s, job.id, pid=1000 + worker) is not None:
                won.append(worker)

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1
    with db.session() as s:
        assert s.get(TrainingJob, job.id).worker_pid == 1000 + won[0]


def test_cancel_ends_a_queued_or_running_job_at_once(db, project):
    """Issue 45 row 10: a running job read as running ("cancelling…") until its worker's next
    poll, 8-30 s while it loaded the encoder. Now it ends as cancelled in the cancel's own
    transaction, and tells its worker to stop."""
    with db.session() as s:
        queued, _ = jobs.create_job(s, project, {})
        assert jobs.request_cancel(s, queued.id).status == "cancelled"
        running, _ = jobs.create_job(s, project, {})
        jobs.claim_job(s, running.id, pid=os.getpid())
        assert not jobs.cancel_requested(s, running.id)
        view = jobs.request_cancel(s, running.id)
        assert view.status == "cancelled" and not view.active
        assert view.message == "cancelled while preparing; the active model is unchanged"
        assert jobs.cancel_requested(s, running.id)
        with pytest.raises(NotFoundError, match="No job #999"):
            jobs.request_cancel(s, 999)


def test_a_cancelled_jobs_late_worker_changes_nothing_but_its_log(db, project):
    """Its worker goes on until its next poll: its progress and lines do not make the job look
    alive again, it cannot register a version, and its own end is only logged."""
    with db.session() as s:
        job, _ = jobs.create_job(s, project, {})
        jobs.claim_job(s, job.id, pid=os.getpid())
        jobs.set_progress(s, job.id, step=3, total=10, loss=0.5, eta=12.0, message="step 3/10")
        jobs.request_cancel(s, job.id)
        jobs.set_progress(s, job.id, step=4, total=10, loss=0.4, eta=9.0, message="step 4/10")
        jobs.log_line(s, job.id, "saving the model", phase="saving")
        with pytest.raises(ConflictError, match="already ended as cancelled"):
            jobs.require_running(s, job.id)
        jobs.finish_job(s, job.id, "cancelled", "cancelled; the active model is unchanged")
        end = jobs.get_job(s, job.id)
        assert (end.status, end.step, end.phase) == ("cancelled", 3, "training")
        assert end.message == "cancelled while training; the active model is unchanged"
        assert "saving the model" in end.log and "after the job had ended: cancelled" in end.log


def test_a_job_whose_version_is_registered_is_left_to_finish(db, project):
    """Once its version is registered (it only prepares the first card's vectors), a cancel
    would say "the active model is unchanged" wrongly: the job goes on and succeeds."""
    with db.session() as s:
        job, _ = jobs.create_job(s, project, {})
        jobs.claim_job(s, job.id, pid=os.getpid())
        version = NewVersion(project, None, "fast", "minilm", {}, {}, "projects/1/m", "0" * 64, 1)
        jobs.registered(s, job.id, register_version(s, version))
        assert jobs.request_cancel(s, job.id).status == "running"
        assert not jobs.cancel_requested(s, job.id)


def test_a_stopping_workers_job_goes_back_to_the_queue_as_if_never_taken(db, project):
    """Issue 57 item 1: ``docker stop`` failed the job; handed back, it is queued again with
    its settings, no worker, no progress, and a second worker claims it."""
    with db.session() as s:
        job, _ = jobs.create_job(s, project, {"method": "fast"})
        jobs.claim_job(s, job.id, pid=os.getpid())
        jobs.set_progress(s, job.id, step=3, total=10, loss=0.5, message="step 3", share=0.3)
        assert jobs.hand_back(s, job.id, "queued again")
        back = jobs.get_job(s, job.id)
        row = s.get(TrainingJob, job.id)
        assert (row.worker_pid, row.started_at, row.heartbeat_at) == (None, None, None)
    assert (back.status, back.step, back.phase, back.progress) == ("queued", 0, "", 0.0)
    assert back.config == {"method": "fast"} and back.message == "queued again"
    assert back.log.rstrip().endswith("queued again") and back.eta_seconds is None
    with db.session() as s:
        assert jobs.claim_job(s, job.id, pid=os.getpid()) is not None


def test_a_handed_back_job_keeps_its_word_when_the_abandoned_run_writes_late(db, project):
    """Seen in the suite: a worker past its grace handed its job back, and the job's thread,
    still at work until the process left, wrote "evaluating 2 encoders…" over "queued again": a
    queued job took the word of a run that no longer owns it. Only a running job's worker
    writes its message, phase and count."""
    with db.session() as s:
        job, _ = jobs.create_job(s, project, {})
        jobs.claim_job(s, job.id, pid=os.getpid())
        assert jobs.hand_back(s, job.id, "queued again")
        jobs.log_line(s, job.id, "evaluating 2 encoders", phase=job_phases.EVALUATING, share=0.4)
        jobs.set_progress(s, job.id, step=3, total=10, loss=None, message="3 of 10", share=0.5)
        back = jobs.get_job(s, job.id)
    assert (back.status, back.message, back.phase, back.step, back.progress) == (
        "queued",
        "queued again",
        "",
        0,
        0.0,
    )


def test_a_job_cancelled_or_registered_is_not_handed_back(db, project):
    with db.session() as s:
        job, _ = jobs.create_job(s, project, {})
        jobs.claim_job(s, job.id, pid=os.getpid())
        jobs.request_cancel(s, job.id)
        assert not jobs.hand_back(s, job.id, "queued again")
        assert jobs.get_job(s, job.id).status == "cancelled"
        other, _ = jobs.create_job(s, project, {})
        jobs.claim_job(s, other.id, pid=os.getpid())
        version = NewVersion(project, None, "fast", "minilm", {}, {}, "projects/1/m", "0" * 64, 1)
        jobs.registered(s, other.id, register_version(s, version))
        assert not jobs.hand_back(s, other.id, "queued again")
        assert jobs.get_job(s, other.id).status == "running"  # it finishes instead


def test_a_cancel_stops_a_registered_jobs_held_out_calibration_and_leaves_its_version(db, project):
    """Issue 55: after its version serves, a job may calibrate out of scope on held-out encoders
    (minutes on a CPU). A cancel then stops that phase at the worker's next poll, and the job
    stays running to end as it would without it: its version counts."""
    with db.session() as s:
        job, _ = jobs.create_job(s, project, {})
        jobs.claim_job(s, job.id, pid=os.getpid())
        version = NewVersion(project, None, "fast", "minilm", {}, {}, "projects/1/m", "0" * 64, 1)
        mv = register_version(s, version)
        jobs.registered(s, job.id, mv)
        jobs.log_line(s, job.id, "calibrating out of scope", phase="calibrating")
        asked = jobs.request_cancel(s, job.id)
        assert asked.status == "running" and asked.model_version_id == mv
        assert asked.message == (
            f"stopping the held-out calibration; v{mv} keeps serving with the quick thresholds"
        )
        assert jobs.cancel_requested(s, job.id)
        jobs.finish_job(s, job.id, "succeeded", "done", mv)
        assert jobs.get_job(s, job.id).status == "succeeded"


def test_progress_log_and_finish_are_recorded(db, project):
    with db.session() as s:
        job, _ = jobs.create_job(s, project, {})
        jobs.claim_job(s, job.id, pid=os.getpid())
        jobs.set_progress(s, job.id, step=3, total=10, loss=0.5, message="step 3/10", share=0.3)
        jobs.log_line(s, job.id, "saving the model")
        mid = jobs.get_job(s, job.id)
        jobs.finish_job(s, job.id, "failed", "boom")
        end = jobs.latest_job(s, project)
    assert (mid.step, mid.total, mid.fraction, mid.message) == (3, 10, 0.3, "saving the model")
    assert (mid.phase, mid.percent, mid.progress) == ("training", 30, 0.3)
    assert end is not None and end.status == "failed" and not end.active
    assert "saving the model" in end.log and end.log.rstrip().endswith("boom")


def test_the_jobs_share_done_never_goes_back_and_shows_99_until_it_has_succeeded(db, project):
    """One bar for the whole job: a phase's count starts again at 0, the job's share does not."""
    with db.session() as s:
        job, _ = jobs.create_job(s, project, {})
        jobs.claim_job(s, job.id, pid=os.getpid())
        assert jobs.get_job(s, job.id).phase == "preparing"
        jobs.set_progress(s, job.id, step=10, total=10, loss=0.1, message="", share=0.7)
        trained = jobs.get_job(s, job.id)
        jobs.log_line(s, job.id, "evaluating", phase="evaluating", share=0.6)  # a late word
        jobs.set_progress(
            s, job.id, step=0, total=1500, loss=None, message="", phase="evaluating", share=0.7
        )
        evaluating = jobs.get_job(s, job.id)
        jobs.tick(s, job.id, share=0.995, eta=4.0)
        jobs.log_line(s, job.id, "registering the version", phase="registering")
        registering = jobs.get_job(s, job.id)
        jobs.finish_job(s, job.id, "succeeded", "v1", None)
        jobs.tick(s, job.id, share=0.2, eta=30.0)  # a late tick after the end: nothing moves
        done = jobs.get_job(s, job.id)
    assert (trained.percent, evaluating.percent) == (70, 70)
    assert (evaluating.phase, evaluating.step, evaluating.total) == ("evaluating", 0, 1500)
    assert (registering.phase, registering.step, registering.percent) == ("registering", 0, 99)
    assert done.percent == 100 and done.progress == 0.995 and done.eta_seconds is None


def test_a_tick_writes_the_time_left_while_running_and_an_ended_job_has_none(db, project):
    with db.session() as s:
        job, _ = jobs.create_job(s, project, {})
        jobs.tick(s, job.id, share=0.5, eta=30.0)  # queued: a tick moves nothing
        queued = jobs.get_job(s, job.id)
        jobs.claim_job(s, job.id, pid=os.getpid())
        jobs.tick(s, job.id, share=0.25, eta=180.0)
        row = s.get(TrainingJob, job.id)
        row.started_at = utcnow() - timedelta(seconds=60)
        running = jobs.get_job(s, job.id)
        jobs.tick(s, job.id, share=0.3, eta=None)  # no honest number: none is kept
        unsure = jobs.get_job(s, job.id)
        jobs.finish_job(s, job.id, "failed", "boom")
        row.eta_seconds = 12.0  # whatever was written last
        ended = jobs.get_job(s, job.id)
    assert (queued.progress, queued.eta_seconds, queued.elapsed) == (0.0, None, None)
    assert (running.progress, running.eta_seconds) == (0.25, 180.0)
    assert running.elapsed is not None and 60 <= running.elapsed < 70
    assert (unsure.progress, unsure.eta_seconds) == (0.3, None)
    assert ended.eta_seconds is None and ended.elapsed is not None


def test_running_jobs_of_dead_or_silent_workers_are_reaped(db, project):
    with db.session() as s:
        remote, _ = jobs.create_job(s, project, {})
        jobs.claim_job(s, remote.id, pid=2**22 + 12345)  # a pid of another machine
        assert job_reaper.reap_dead_jobs(s) == 0  # beating: a pid means nothing across machines
        jobs.finish_job(s, remote.id, "succeeded", "done")
        dead, _ = jobs.create_job(s, project, {})
        jobs.claim_job(s, dead.id, pid=os.getpid())
        assert job_reaper.reap_dead_jobs(s, alive=job_reaper.pid_alive) == 0  # alive and beating
        assert job_reaper.reap_dead_jobs(s, alive=lambda pid: False) == 1
        assert jobs.get_job(s, dead.id).status == "failed"
        silent, _ = jobs.create_job(s, project, {})
        jobs.claim_job(s, silent.id, pid=os.getpid())
        row = s.get(TrainingJob, silent.id)
        row.heartbeat_at = utcnow() - timedelta(seconds=job_reaper.DEAD_AFTER_SECONDS + 5)
        assert job_reaper.reap_dead_jobs(s, dead_after=job_reaper.DEAD_AFTER_SECONDS + 10) == 0
        assert job_reaper.reap_dead_jobs(s) == 1
        assert "stopped unexpectedly" in jobs.get_job(s, silent.id).message


def test_a_job_reaped_in_its_int8_phase_says_its_version_stays(db, project):
    """Issue 57 (after issue 55's phases): a job whose worker died after its version was
    registered (the int8 phase) said "the active model is unchanged" though the version serves."""
    with db.session() as s:
        job, _ = jobs.create_job(s, project, {})
        jobs.claim_job(s, job.id, pid=os.getpid())
        version = NewVersion(project, None, "fast", "minilm", {}, {}, "projects/1/m", "0" * 64, 1)
        mv = register_version(s, version, activate=True)
        jobs.registered(s, job.id, mv)
        assert job_reaper.reap_dead_jobs(s, alive=lambda pid: False) == 1
        reaped = jobs.get_job(s, job.id)
    assert reaped.status == "failed" and reaped.model_version_id == mv
    assert f"after registering v{mv}: it keeps its fp32 encoder" in reaped.message
    assert "unchanged" not in reaped.message


def test_a_zombie_or_missing_pid_is_not_alive():
    assert job_reaper.pid_alive(os.getpid())
    assert not job_reaper.pid_alive(None) and not job_reaper.pid_alive(0)
    assert not job_reaper.pid_alive(2**22 + 12345)


def test_a_reaped_job_stays_failed_and_tells_its_late_worker_to_stop(db, project):
    with db.session() as s:
        job, _ = jobs.create_job(s, project, {})
        jobs.claim_job(s, job.id, pid=os.getpid())
        assert not jobs.cancel_requested(s, job.id)
        jobs.require_running(s, job.id)
        assert job_reaper.reap_dead_jobs(s, alive=lambda pid: False) == 1
        assert jobs.cancel_requested(s, job.id)  # the late worker stops at its next poll
        with pytest.raises(ConflictError, match="already ended as failed"):
            jobs.require_running(s, job.id)
        jobs.finish_job(s, job.id, "succeeded", "v7: accuracy 0.9", 7)
        late = jobs.get_job(s, job.id)
    assert late.status == "failed" and "stopped unexpectedly" in late.message
    assert late.model_version_id is None
    assert "after the job had ended: succeeded: v7" in late.log


@pytest.mark.parametrize("db", ["postgresql"], indirect=True)
def test_the_reaper_never_fails_a_job_over_the_end_its_worker_writes_meanwhile(db, project):
    """Two connections on PostgreSQL: the worker is writing its job's end (the row written, not
    yet committed) when a reaper finds the job silent past the timeout. The worker's end wins:
    the reaper waits for the row, sees the job no longer running and leaves it (it failed the
    succeeded job over its end)."""
    import threading
    import time

    with db.session() as s:
        job, _ = jobs.create_job(s, project, {})
        jobs.claim_job(s, job.id, pid=os.getpid())
    with db.session() as s:  # silent for five minutes (a long pause), then it finishes
        s.get(TrainingJob, job.id).heartbeat_at = utcnow() - timedelta(minutes=5)
    written, release, reaped = threading.Event(), threading.Event(), []

    def worker() -> None:
        with db.write() as s:
            jobs.finish_job(s, job.id, "succeeded", "v1: accuracy 0.9")
            s.flush()
            written.set()
            release.wait(10)

    def reaper() -> None:
        with db.session() as s:
            reaped.append(job_reaper.reap_dead_jobs(s))

    finishing = threading.Thread(target=worker)
    finishing.start()
    assert written.wait(10)
    reaping = threading.Thread(target=reaper)
    reaping.start()
    time.sleep(0.5)  # the reaper has read the job as running and silent, and waits for its row
    release.set()
    finishing.join(10)
    reaping.join(10)
    with db.session() as s:
        ended = jobs.get_job(s, job.id)
    assert (ended.status, ended.message, reaped) == ("succeeded", "v1: accuracy 0.9", [0])


@pytest.mark.parametrize("db", ["postgresql"], indirect=True)
def test_a_worker_whose_clock_is_behind_is_not_reaped_while_it_beats(db, project, monkeypatch):
    """A team's worker runs on a machine whose clock is five minutes behind the app's: its claim
    and heartbeats are stamped on the database's clock, so the app's reaper does not fail its job
    while it beats (it was failed as silent at every look); once it stops beating, it is."""
    from storage import tables

    behind = lambda: tables.utcnow() - timedelta(minutes=5)  # noqa: E731
    with db.session() as s:
        job, _ = jobs.create_job(s, project, {})
    with monkeypatch.context() as worker_machine:
        worker_machine.setattr(jobs, "utcnow", behind)
        with db.write() as s:
            jobs.claim_job(s, job.id, pid=2**22 + 12345)
        with db.write() as s:
            jobs.heartbeat(s, job.id)
    with db.session() as s:
        assert job_reaper.reap_dead_jobs(s) == 0
        assert jobs.get_job(s, job.id).status == "running"
    with db.session() as s:  # then silent past the timeout, on the database's clock
        s.execute(
            update(TrainingJob)
            .where(TrainingJob.id == job.id)
            .values(heartbeat_at=jobs.clock(s) - timedelta(seconds=61))
        )
    with db.session() as s:
        assert job_reaper.reap_dead_jobs(s) == 1


def test_a_phases_first_line_replaces_the_time_left_the_phase_before_said(db, project):
    """The last tick's time left counted down to the end of the phase before: the int8 phase
    of a 3,078-question run said "about 1 s to the end" for its first second, 37 s before the
    end. A phase's line carries its own (None: being estimated); a line without one leaves it."""
    with db.session() as s:
        job, _ = jobs.create_job(s, project, {})
        jobs.claim_job(s, job.id, pid=os.getpid())
        jobs.log_line(s, job.id, "evaluating", phase=job_phases.EVALUATING, share=0.6)
        jobs.tick(s, job.id, share=0.9, eta=1.2)  # 1 s to the measurement's end
        jobs.log_line(s, job.id, "building the int8 copy", phase=job_phases.INT8, eta=49.7)
        int8 = jobs.get_job(s, job.id).eta_seconds
        jobs.log_line(s, job.id, "a word on the side")  # no phase: the time left stays
        aside = jobs.get_job(s, job.id).eta_seconds
        jobs.log_line(s, job.id, "recording the version", phase=job_phases.REGISTERING)
        registering = jobs.get_job(s, job.id).eta_seconds
    assert (int8, aside, registering) == (49.7, 49.7, None)
