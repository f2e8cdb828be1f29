"""The team set-up end to end, on real servers on loopback: PostgreSQL, Redis (Huey's queue) and an
S3-compatible bucket (moto). The app (this process, its own data directory) and a training worker
(another process, another working directory) share nothing but the three URLs. Killing the worker
with SIGKILL in the middle of training fails the job once its heartbeat stops, leaves nothing in the
bucket, and the next retrain, by a new worker, succeeds; its model is read from the bucket."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.services import retrain_jobs as svc
from app.services import versions as version_svc
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

    ctx = ServingState.open(load_settings(tmp_path / "app"))
    ctx.training.enqueue = queue_for(ctx.settings)
    yield ctx
    ctx.close()


def _worker(folder: Path) -> subprocess.Popen[bytes]:
    """``intent-studio worker`` in a working directory of its own (this checkout's code)."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "PYTHONPATH": str(ROOT)}
    log = (folder / "worker.log").open("ab")
    args = [sys.executable, "-m", "app", "--data-dir", str(folder / "data"), "worker"]
    return subprocess.Popen(
        args, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


def _kill(proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
    proc.wait(20)


def test_a_worker_on_another_box_trains_and_its_kill_9_leaves_nothing_behind(
    app_ctx, s3, team, tmp_path
) -> None:
    assert app_ctx.settings.queue_url and not app_ctx.settings.local_workers
    make_tiny(app_ctx)
    gpu_box = _worker(tmp_path / "gpu-box")
    try:
        view, _ = svc.request_retrain(
            app_ctx.training, live(app_ctx, "tiny"), {**QUICK, "epochs": 60}
        )
        deadline = time.monotonic() + 240
        while svc.job(app_ctx.training, view.id).step < 1:
            assert time.monotonic() < deadline, "the worker never started training"
            assert gpu_box.poll() is None, (tmp_path / "gpu-box" / "worker.log").read_text()
            time.sleep(0.3)
    finally:
        _kill(gpu_box)  # kill -9, mid-training
    second_box = _worker(tmp_path / "second-box")  # its start-up overlaps the wait below
    # Its pid means nothing here: the job fails once its heartbeat is older than the timeout.
    deadline = time.monotonic() + JOB_TIMEOUT + 20
    while (failed := svc.job(app_ctx.training, view.id)).active:
        assert time.monotonic() < deadline, "the dead worker's job was never failed"
        time.sleep(0.5)
    assert failed.status == "failed" and "stopped unexpectedly" in failed.message
    assert version_svc.history(app_ctx.db, live(app_ctx, "tiny")) == []
    # nothing half-written in the bucket: no model files; the embedding cache may hold the frozen
    # base's vectors (the job's plan builds its factory, anchors included, before training), whole
    # shards under their content's name that any later job reads
    assert [k for k in s3.keys(team) if not k.startswith("studio/vectors/")] == []

    try:
        again, created = svc.request_retrain(app_ctx.training, live(app_ctx, "tiny"), QUICK)
        assert created and again.id != view.id
        done = svc.wait(app_ctx.training, again.id, timeout=300)
        assert done.status == "succeeded", done.log
    finally:
        _kill(second_box, signal.SIGTERM)
    mv_id = done.model_version_id
    assert mv_id is not None
    assert [v["version"] for v in version_svc.history(app_ctx.db, live(app_ctx, "tiny"))] == [mv_id]
    from storage.tables import ModelVersion

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
