"""Issue 45, row 11: ``intent-studio backup`` and ``restore`` refused PostgreSQL and a bucket, and
the README said nothing of backing up a team. A team deployment (PostgreSQL, model files in an S3
bucket: the test servers on loopback) is backed up while its app is open, restored into an empty
database and an empty bucket, and the restored deployment predicts exactly as the first did; a
restore over a database or a bucket that holds anything is refused and changes nothing."""

from __future__ import annotations

import uuid

import pytest

from app import worker
from app.cli import main
from app.config import ENV_ARTIFACTS_URL, ENV_DB_URL, load_settings
from app.services.models import predict as predict_svc
from app.services.models.versions import activate, history
from app.services.training import retrain_jobs
from app.serving.state import ServingState
from storage.backup import tables_in
from tests.handles import live
from tests.samples import QUICK, make_tiny

pytestmark = pytest.mark.slow

QUERIES = ["I can't find my card anywhere", "how much cash is in my account", "hey there"]


def empty_database(postgres) -> str:
    """A database with nothing in it (not even the schema): its URL."""
    name = f"e_{uuid.uuid4().hex[:12]}"
    postgres.execute(f"CREATE DATABASE {name}")
    return postgres.url(name)


def point_at(monkeypatch, db_url: str, bucket: str) -> None:
    monkeypatch.setenv(ENV_DB_URL, db_url)
    monkeypatch.setenv(ENV_ARTIFACTS_URL, f"s3://{bucket}/studio")


def test_a_team_deployment_is_restored_into_an_empty_database_and_bucket(
    postgres, s3, tmp_path, monkeypatch, capsys
):
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("INTENT_STUDIO_DATA_DIR", raising=False)
    bucket = s3.new_bucket()
    point_at(monkeypatch, postgres.new_database(), bucket)
    serving_state = ServingState.open(load_settings(tmp_path / "app"))
    make_tiny(serving_state)
    job, _ = retrain_jobs.request_retrain(  # LoRA: a small model file
        serving_state.training,
        live(serving_state, "tiny"),
        {**QUICK, "method": "lora"},
        enqueue=False,
    )
    worker.execute_job(serving_state, job.id)
    activate(
        serving_state.factories,
        live(serving_state, "tiny"),
        retrain_jobs.job(serving_state.training, job.id).model_version_id,
    )
    before = predict_svc.predict(serving_state.live, live(serving_state, "tiny"), QUERIES)
    versions = history(serving_state.db, live(serving_state, "tiny"))

    archive = tmp_path / "team.tar.gz"
    assert main(["--data-dir", str(tmp_path / "app"), "backup", "-o", str(archive)]) == 0
    assert "PostgreSQL database" in capsys.readouterr().out
    serving_state.close()

    # refused: a database that holds a schema (a new app's), or a bucket that holds anything
    target_db, target_bucket = postgres.new_database(), s3.new_bucket()
    point_at(monkeypatch, target_db, target_bucket)
    assert main(["--data-dir", str(tmp_path / "box"), "restore", str(archive)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert s3.keys(target_bucket) == []
    target_db = empty_database(postgres)
    point_at(monkeypatch, target_db, bucket)
    assert main(["--data-dir", str(tmp_path / "box"), "restore", str(archive)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert tables_in(target_db) == []

    point_at(monkeypatch, target_db, target_bucket)
    assert main(["--data-dir", str(tmp_path / "box"), "restore", str(archive)]) == 0
    models = [k for k in s3.keys(bucket) if not k.startswith("studio/vectors/")]  # a cache
    assert models and s3.keys(target_bucket) == models
    restored = ServingState.open(load_settings(tmp_path / "other-box"))  # its own empty cache
    try:
        assert history(restored.db, live(restored, "tiny")) == versions
        after = predict_svc.predict(restored.live, live(restored, "tiny"), QUERIES)
        for a, b in zip(before, after, strict=True):
            assert a["top"] == b["top"]
            assert a["score"] == pytest.approx(b["score"], abs=1e-5)
    finally:
        restored.close()
    assert main(["--data-dir", str(tmp_path / "box"), "restore", str(archive)]) == 2  # not twice
