"""The team set-up end to end, on real servers on loopback: PostgreSQL, Redis (Huey's queue) and an
S3-compatible bucket (moto). The app (this process, its own data directory) and a training worker
(another process, another working directory) share nothing but the three URLs. Killing the worker
with SIGKILL in the middle of training fails the job once its heartbeat stops, leaves nothing in the
bucket, and the next retrain, by a new worker, succeeds; its model is read from the bucket.
Stopping a worker as ``docker stop`` does (SIGTERM) loses nothing: its job ends within the grace
or goes back to the queue, and the worker exits 0; an idle worker whose Redis goes away says so
in one line, not a traceback a second (issue 57)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.services.models import versions as version_svc
from app.services.training import retrain_jobs as svc
from storage.remote_artifacts import MARKER
from tests.handles import live
from tests.samples import QUICK, make_tiny

ROOT = Path(__file__).resolve().parents[2]
JOB_TIMEOUT = 10  # seconds without a heartbeat before the job counts as dead (1.7 s beats)

pytestmark = pytest.mark.slow


@pytest.fixture
def team(postgres, redis_url, s3, tmp_path, monkeypatch):
    """The three URLs in the environment, as each machine of a team would have them."""
    import redis

    redis.Redis.from_url(redis_url).flushdb()  # a queue of its own
    bucket = s3.new_bucket()
    env = {
        "INTENT_STUDIO_DB_URL": postgres.new_database(),
        "INTENT_STUDIO_QUEUE_URL": redis_url,
        "INTENT_STUDIO_ARTIFACTS_URL": f"s3://{bucket}/studio",
        "INTENT_STUDIO_JOB_TIMEOUT": str(JOB_TIMEOUT),
        **s3.env(),
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("INTENT_STUDIO_DATA_DIR", raising=False)
    return bucket


@pytest.fixture
def app_ctx(team, tmp_path):
    from app.config import load_settings
    from app.serving.state import ServingState
    from app.worker import queue_for

    serving_state = ServingState.open(load_settings(tmp_path / "app"))
    serving_state.training.enqueue = queue_for(serving_state.settings)
    yield serving_state
    serving_state.close()


def _worker(folder: Path, **env_vars: str) -> subprocess.Popen[bytes]:
    """``intent-studio worker`` in a working directory of its own (this checkout's code), with
    ``env_vars`` added to its environment."""
    folder.mkdir(parents=True, exist_ok=True)
    path = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(ROOT)]))
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "PYTHONPATH": path, **env_vars}
    log = (folder / "worker.log").open("ab")
    args = [sys.executable, "-m", "app", "-v", "--data-dir", str(folder / "data"), "worker"]
    return subprocess.Popen(
        args, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


def _kill(proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
    proc.wait(20)


def test_a_worker_on_another_box_trains_and_its_kill_9_leaves_nothing_behind(
    app_ctx, s3, team, tmp_path, tiny_everywhere
) -> None:
    assert app_ctx.settings.queue_url and not app_ctx.settings.local_workers
    make_tiny(app_ctx, encoder=tiny_everywhere)
    gpu_box = _worker(tmp_path / "gpu-box")
    try:
        view, _ = svc.request_retrain(
            # one schedule, no first pass: the kill comes while nothing is being saved
            app_ctx.training,
            live(app_ctx, "tiny"),
            {**QUICK, "epochs": 60, "first_pass": 0},
        )
        deadline = time.monotonic() + 240
        while svc.job(app_ctx.training, view.id).step < 1:
            assert time.monotonic() < deadline, "the worker never started training"
            assert gpu_box.poll() is None, (tmp_path / "gpu-box" / "worker.log").read_text()
            time.sleep(0.3)
    finally:
        _kill(gpu_box)  # kill -9, mid-training
    second_box = _worker(tmp_path / "second-box")  # its start-up overlaps the wait below
    try:
        # Its pid means nothing here: the job fails once its heartbeat is older than the timeout.
        deadline = time.monotonic() + JOB_TIMEOUT + 20
        while (failed := svc.job(app_ctx.training, view.id)).active:
            assert time.monotonic() < deadline, "the dead worker's job was never failed"
            time.sleep(0.5)
        assert failed.status == "failed" and "stopped unexpectedly" in failed.message
        # nothing half-registered: no version, or the first pass it served before the kill, whole
        kept = [v["version"] for v in version_svc.history(app_ctx.db, live(app_ctx, "tiny"))]
        assert kept == ([] if failed.model_version_id is None else [failed.model_version_id])
        # nothing half-written in the bucket: no model files but that first pass's (and the base
        # encoder's int8 copy, which the second worker's warm-up may be writing under .tmp/: the
        # test's end finds no .tmp/ left); the embedding cache
        # may hold the frozen base's vectors (the job's plan builds its factory, anchors included,
        # before training), whole shards under their content's name that any later job reads
        from storage.tables import ModelVersion

        with app_ctx.db.session() as s:
            first = [f"studio/{s.get(ModelVersion, v).artifact_path}/" for v in kept]
        written = [
            k
            for k in s3.keys(team)
            if not k.startswith(("studio/vectors/", "studio/base/", "studio/.tmp/", *first))
        ]
        assert written == []

        again, created = svc.request_retrain(app_ctx.training, live(app_ctx, "tiny"), QUICK)
        assert created and again.id != view.id
        done = svc.wait(app_ctx.training, again.id, timeout=300)
        assert done.status == "succeeded", done.log
    finally:
        _kill(second_box, signal.SIGTERM)
    mv_id = done.model_version_id
    assert mv_id is not None
    assert [v["version"] for v in version_svc.history(app_ctx.db, live(app_ctx, "tiny"))] == [
        mv_id,
        *kept,
    ]
    with app_ctx.db.session() as s:
        mv = s.get(ModelVersion, mv_id)
    keys = s3.keys(team)
    assert f"studio/{mv.artifact_path}/{MARKER}" in keys
    assert not any("/.tmp/" in k for k in keys)
    # The app reads the model from the bucket (downloaded to its own cache) and checks it.
    assert app_ctx.artifacts.verify(mv.artifact_path, mv.artifact_sha256)
    local = app_ctx.artifacts.path(mv.artifact_path)
    assert local.is_relative_to(app_ctx.settings.cache_dir)
    encoder = app_ctx.models.encoder_for_version(mv)
    assert encoder.encode(["where is my parcel"]).shape[0] == 1


def _training(app_ctx, job_id: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    """Wait until the job is running on ``proc`` and has trained a step."""
    deadline = time.monotonic() + 240
    while (view := svc.job(app_ctx.training, job_id)).status != "running" or view.step < 1:
        assert time.monotonic() < deadline, f"the worker never trained: {log.read_text()[-3000:]}"
        assert proc.poll() is None, log.read_text()[-3000:]
        time.sleep(0.3)


def _stopped(proc: subprocess.Popen[bytes], log: Path, within: float) -> str:
    """SIGTERM to the worker (what ``docker stop`` sends), its exit awaited: its log."""
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(within)
    except subprocess.TimeoutExpired:
        _kill(proc)
        raise AssertionError(f"not stopped within {within} s: {log.read_text()[-3000:]}") from None
    text = log.read_text()
    assert code == 0, text[-3000:]  # not 134: "terminate called without an active exception"
    assert "terminate called" not in text and "Traceback" not in text, text[-3000:]
    return text


def test_a_stopped_worker_hands_its_job_back_or_finishes_it_within_the_grace(
    app_ctx, team, tmp_path, tiny_everywhere
) -> None:
    """Issue 57 item 1: SIGTERM in training abandoned the job (failed once its heartbeat went
    silent) and aborted the worker with exit 134 in 6 of 10 tries."""
    make_tiny(app_ctx, encoder=tiny_everywhere)
    hurried = _worker(tmp_path / "a", INTENT_STUDIO_STOP_GRACE="1")
    log = tmp_path / "a" / "worker.log"
    try:
        view, _ = svc.request_retrain(
            # the tiny encoder trains 40 epochs of this project in 1.7 s: 100 (5 s) keep the hurried
            # worker's grace of 1 s well inside the training
            app_ctx.training,
            live(app_ctx, "tiny"),
            {**QUICK, "epochs": 100},
        )
        _training(app_ctx, view.id, hurried, log)
        text = _stopped(hurried, log, within=60)
    finally:
        _kill(hurried)
    back = svc.job(app_ctx.training, view.id)
    assert back.status == "queued" and "queued again" in back.message, (back.message, text)
    assert back.step == 0 and back.config["epochs"] == 100
    assert view.id in app_ctx.training.enqueue.pending()  # its message is back on Redis
    # nothing half-registered: no version, or the first pass it served goes back with the job
    kept = [v["version"] for v in version_svc.history(app_ctx.db, live(app_ctx, "tiny"))]
    assert kept in ([], [back.model_version_id]), (kept, back.model_version_id)

    patient = _worker(tmp_path / "b", INTENT_STUDIO_STOP_GRACE="600")
    log = tmp_path / "b" / "worker.log"
    try:
        _training(app_ctx, view.id, patient, log)  # the same job, started over
        _stopped(patient, log, within=300)  # it ends within the grace, then the worker exits
    finally:
        _kill(patient)
    done = svc.job(app_ctx.training, view.id)
    assert done.status == "succeeded", done.log
    history = version_svc.history(app_ctx.db, live(app_ctx, "tiny"))
    assert [v["version"] for v in history] == [done.model_version_id]


@pytest.fixture
def without_int8(monkeypatch):
    """App and workers with no int8 copies (``INTENT_STUDIO_INT8=off``, as they must agree): no
    worker builds the base encoder's copy in its warm-up, so nothing but the test's lock
    holds the project's writers."""
    monkeypatch.setenv("INTENT_STUDIO_INT8", "off")


def test_a_worker_stopped_while_its_job_prepares_hands_it_back_within_the_grace(
    without_int8, app_ctx, team, tmp_path, tiny_everywhere
) -> None:
    """Issue 73 item 12: SIGTERM while a job was preparing lost it (1 of 4 tries at load 27,
    PostgreSQL, Redis and S3): its thread was in a step that checks nothing until Huey's
    shutdown timeout (the grace + 60 s) ended the worker, the job still running, then failed
    as "the training worker stopped unexpectedly"; at load 24 the hand-back took 63 s. Here
    the job's snapshot waits for its project's lock, which a long import holds (the test),
    while the worker is stopped: the job goes back to the queue within the grace, the worker
    exits 0 while the lock is still held, and the next worker completes the job once."""
    from storage.db import WriteLock

    grace = 3
    make_tiny(app_ctx, encoder=tiny_everywhere)
    first = _worker(tmp_path / "a", INTENT_STUDIO_STOP_GRACE=str(grace))
    log = tmp_path / "a" / "worker.log"
    try:
        deadline = time.monotonic() + 240
        while "warmed" not in log.read_text():  # up, and its warm-up done: nothing else waits
            assert time.monotonic() < deadline and first.poll() is None, log.read_text()[-3000:]
            time.sleep(0.3)
        view, _ = svc.request_retrain(app_ctx.training, live(app_ctx, "tiny"), QUICK, enqueue=False)
        pid = live(app_ctx, "tiny").id
        with app_ctx.db.write(WriteLock.project(pid)):  # an import of the project, holding on
            app_ctx.training.enqueue(view.id)
            while not _waiting_for_a_lock(app_ctx.db):  # the job's snapshot, for the project's
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.1)
            asked = time.monotonic()
            text = _stopped(first, log, within=grace + 8)  # while the lock is still held
            took = time.monotonic() - asked
            back = svc.job(app_ctx.training, view.id)
    finally:
        _kill(first)
    assert back.status == "queued" and "queued again" in back.message, (back.log, text[-3000:])
    assert view.id in app_ctx.training.enqueue.pending()  # its message is back on Redis
    assert took < grace + 8, took
    assert "handed back from here" in text  # by the worker's main thread, at the grace's end

    second = _worker(tmp_path / "b")
    log = tmp_path / "b" / "worker.log"
    try:
        done = svc.wait(app_ctx.training, view.id, timeout=300)
        _stopped(second, log, within=120)
    finally:
        _kill(second)
    assert done.status == "succeeded", done.log
    history = version_svc.history(app_ctx.db, live(app_ctx, "tiny"))
    assert [v["version"] for v in history] == [done.model_version_id]  # one job, one version


def _waiting_for_a_lock(db) -> bool:
    """Whether a PostgreSQL session waits for an advisory lock now."""
    from sqlalchemy import text

    with db.session() as s:
        waiting = s.scalar(
            text(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE wait_event_type = 'Lock' AND wait_event = 'advisory'"
            )
        )
    return bool(waiting)


def _catches_sigterm(pid: int) -> bool:
    """Whether process ``pid`` has its own handler for SIGTERM now (``SigCgt`` in /proc)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt"))
    return bool(int(caught, 16) & (1 << (signal.SIGTERM - 1)))


def test_a_worker_stopped_as_it_starts_exits_0(tmp_path) -> None:
    """Issue 73 item 12: a worker stopped in its first second exited -15: it obeyed SIGTERM
    only once Huey's consumer ran, seconds after its start (its encoders read, its warm-up
    begun). It obeys from its first moment now; stopped then, it takes no job and exits 0."""
    proc = _worker(tmp_path / "w")
    log = tmp_path / "w" / "worker.log"
    try:
        deadline = time.monotonic() + 60
        while not _catches_sigterm(proc.pid):  # the first moment the worker can be asked
            assert time.monotonic() < deadline and proc.poll() is None, log.read_text()[-3000:]
            time.sleep(0.01)
        text = _stopped(proc, log, within=60)
    finally:
        _kill(proc)
    assert "consuming" not in text, text[-3000:]  # stopped before it took any job


def test_an_idle_worker_says_once_that_redis_is_gone_and_still_stops_cleanly(tmp_path) -> None:
    """Issue 57 item 8: Huey logged a traceback a second while Redis was down."""
    from tests.servers import start_redis

    redis_server = start_redis()  # a Redis of its own, to take away
    url = next(redis_server)
    folder = tmp_path / "w"
    proc = _worker(folder, INTENT_STUDIO_QUEUE_URL=url)
    log = folder / "worker.log"
    try:
        deadline = time.monotonic() + 120
        while "consuming" not in log.read_text():
            assert time.monotonic() < deadline and proc.poll() is None, log.read_text()[-3000:]
            time.sleep(0.3)
        redis_server.close()  # Redis is gone
        time.sleep(6)
        text = log.read_text()
        assert text.count("the training queue is not answering") == 1, text[-3000:]
        assert "Traceback" not in text and "Error reading" not in text, text[-3000:]
        _stopped(proc, log, within=60)
    finally:
        _kill(proc)
        redis_server.close()
