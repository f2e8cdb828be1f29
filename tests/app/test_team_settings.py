"""Settings for a team come from URLs only (issue 16): the queue, the model files and the job
timeout; the embedded default needs none of them; a bad URL is a clear refusal (CLI exit 2)."""

from __future__ import annotations

import pytest
from huey import RedisHuey, SqliteHuey

from app.cli import main
from app.config import load_settings
from app.serving.state import ServingState
from app.worker import make_queue, worker_env
from app.worker.reporter import heartbeat_seconds
from storage.artifacts import ArtifactStore
from storage.remote_artifacts import RemoteArtifactStore

URLS = ("INTENT_STUDIO_QUEUE_URL", "INTENT_STUDIO_ARTIFACTS_URL", "INTENT_STUDIO_JOB_TIMEOUT")


@pytest.fixture(autouse=True)
def _no_team_env(monkeypatch):
    for name in URLS:
        monkeypatch.delenv(name, raising=False)


def test_the_embedded_default_needs_no_server(tmp_path):
    settings = load_settings(tmp_path)
    assert settings.queue_url is None and settings.local_workers
    assert not settings.artifacts_remote and settings.artifacts_dir == tmp_path / "artifacts"
    assert isinstance(make_queue(settings)[0], SqliteHuey)
    assert heartbeat_seconds(settings) == 5.0
    serving_state = ServingState.open(settings)
    try:
        assert (
            type(serving_state.artifacts) is ArtifactStore
            and serving_state.artifacts.root == settings.artifacts_dir
        )
    finally:
        serving_state.close()


def test_the_urls_pick_redis_a_bucket_and_the_heartbeat(tmp_path, monkeypatch):
    monkeypatch.setenv("INTENT_STUDIO_QUEUE_URL", "redis://:secret@queue:6379/2")
    monkeypatch.setenv("INTENT_STUDIO_ARTIFACTS_URL", "memory://team/models")
    monkeypatch.setenv("INTENT_STUDIO_JOB_TIMEOUT", "12")
    monkeypatch.setenv("INTENT_STUDIO_INT8", "Off")
    settings = load_settings(tmp_path)
    assert settings.int8 is False
    assert not settings.local_workers and settings.artifacts_remote
    huey, _ = make_queue(settings)  # no connection until a job is queued
    assert isinstance(huey, RedisHuey)
    assert heartbeat_seconds(settings) == 2.0
    serving_state = ServingState.open(settings)
    try:
        assert isinstance(serving_state.artifacts, RemoteArtifactStore)
        assert serving_state.artifacts.root == settings.cache_dir / "artifacts"
    finally:
        serving_state.close()
    # A worker the app supervises gets the same URLs even when they came from elsewhere.
    env = worker_env(settings)
    assert env["INTENT_STUDIO_QUEUE_URL"] == "redis://:secret@queue:6379/2"
    assert env["INTENT_STUDIO_ARTIFACTS_URL"] == "memory://team/models"
    assert env["INTENT_STUDIO_JOB_TIMEOUT"] == "12"
    assert env["INTENT_STUDIO_INT8"] == "off"


def test_a_shared_folder_for_model_files_is_used_in_place(tmp_path, monkeypatch):
    monkeypatch.setenv("INTENT_STUDIO_ARTIFACTS_URL", str(tmp_path / "shared"))
    settings = load_settings(tmp_path / "data")
    assert settings.artifacts_dir == tmp_path / "shared"
    serving_state = ServingState.open(settings)
    try:
        with serving_state.artifacts.writing("m") as tmp:
            (tmp / "w").write_text("x")
    finally:
        serving_state.close()
    assert (tmp_path / "shared" / "m" / "w").read_text() == "x"


@pytest.mark.parametrize(
    ("env", "value", "message"),
    [
        ("INTENT_STUDIO_QUEUE_URL", "postgres://db/queue", "must be a Redis URL"),
        ("INTENT_STUDIO_JOB_TIMEOUT", "soon", "INTENT_STUDIO_JOB_TIMEOUT must be a whole number"),
        ("INTENT_STUDIO_INT8", "fast", "INTENT_STUDIO_INT8 must be on or off"),
    ],
)
def test_a_bad_setting_is_refused_with_exit_2(tmp_path, monkeypatch, capsys, env, value, message):
    monkeypatch.setenv(env, value)
    with pytest.raises(ValueError, match=message):
        load_settings(tmp_path)
    assert main(["--data-dir", str(tmp_path), "projects"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_backup_refuses_a_database_it_cannot_dump(tmp_path, monkeypatch, capsys):
    """PostgreSQL and a bucket are backed up (tests/app/test_team_backup.py); another kind of
    database is refused before anything is written."""
    monkeypatch.setenv("INTENT_STUDIO_DB_URL", "mysql://team@db/studio")
    out = tmp_path / "b.tar.gz"
    assert main(["--data-dir", str(tmp_path), "backup", "-o", str(out)]) == 2
    assert "backup covers SQLite and PostgreSQL databases only" in capsys.readouterr().err
    assert not out.exists()
