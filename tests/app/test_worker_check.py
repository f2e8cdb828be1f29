"""``intent-studio worker --check``, the worker containers' healthcheck: 0 when a worker with
these settings could take a job now; 1 (Docker's "unhealthy", never its reserved 2) naming what
would stop it: a database without the schema, a queue or bucket that does not answer, settings
that differ from the app's, CUDA asked for without a GPU."""

from __future__ import annotations

import pytest

from app.cli import main
from app.config import DEPLOYMENT, ENV_ARTIFACTS_URL, ENV_INT8, ENV_QUEUE_URL, load_settings
from storage import jobs
from storage.db import Database, sqlite_url
from storage.projects import create_project
from tests.servers import free_port


@pytest.fixture(autouse=True)
def _no_team_env(monkeypatch):
    for name in (ENV_QUEUE_URL, ENV_ARTIFACTS_URL, "INTENT_STUDIO_DEVICE", "INTENT_STUDIO_DB_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def data_dir(tmp_path):
    """A data directory whose database has the schema (as once a worker or the app started)."""
    Database(sqlite_url(tmp_path / "studio.db")).dispose()
    return tmp_path


def check(data_dir, capsys) -> tuple[int, str]:
    status = main(["--data-dir", str(data_dir), "worker", "--check"])
    out = capsys.readouterr()
    return status, out.out + out.err


def test_a_worker_that_could_take_a_job_is_ready(data_dir, capsys):
    assert check(data_dir, capsys) == (
        0,
        "ready: database, the local queue and the model store answer\n",
    )


def test_a_database_without_the_schema_is_not_ready(tmp_path, capsys):
    status, text = check(tmp_path, capsys)
    assert status == 1
    assert text.startswith("not ready: the database does not answer (or has no schema yet)")
    assert "training_jobs" in text and "SELECT" not in text  # one line, not the statement


def test_a_queue_that_does_not_answer_is_named(data_dir, capsys, monkeypatch):
    monkeypatch.setenv(ENV_QUEUE_URL, f"redis://127.0.0.1:{free_port()}/0")
    status, text = check(data_dir, capsys)
    assert status == 1
    assert text.startswith("not ready: the queue (Redis) does not answer: ConnectionError")


def test_settings_that_differ_from_the_newest_jobs_are_not_ready(data_dir, capsys, monkeypatch):
    monkeypatch.setenv(ENV_INT8, "off")
    app_side = load_settings(data_dir)
    db = Database(app_side.database_url)
    with db.write() as s:
        project = create_project(s, "p")
        recorded = {**app_side.shared_with_workers(), ENV_INT8: "on"}
        job, _ = jobs.create_job(s, project.id, {DEPLOYMENT: recorded})
    db.dispose()
    status, text = check(data_dir, capsys)
    assert status == 1
    assert text == (
        f"not ready: settings differ from the app's (as of job #{job.id}), so jobs would be "
        "refused: INTENT_STUDIO_INT8: the app's is 'on', this process's 'off'\n"
    )


def test_a_setting_that_does_not_parse_is_unhealthy_not_a_usage_error(
    data_dir, capsys, monkeypatch
):
    monkeypatch.setenv("INTENT_STUDIO_JOB_TIMEOUT", "soon")
    status, text = check(data_dir, capsys)
    assert status == 1 and "INTENT_STUDIO_JOB_TIMEOUT must be a whole number" in text


def test_cuda_asked_for_without_a_gpu_is_not_ready(data_dir, capsys, monkeypatch):
    import core.encoding.registry

    monkeypatch.setenv("INTENT_STUDIO_DEVICE", "cuda")
    monkeypatch.setattr(core.encoding.registry, "default_device", lambda: "cpu")
    status, text = check(data_dir, capsys)
    assert status == 1 and "INTENT_STUDIO_DEVICE is 'cuda' but torch sees no GPU" in text


@pytest.mark.slow
def test_the_bucket_must_exist(data_dir, capsys, monkeypatch, s3):
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv(ENV_ARTIFACTS_URL, "s3://no-such-bucket/studio")
    status, text = check(data_dir, capsys)
    assert status == 1
    assert text.startswith("not ready: the model store s3://no-such-bucket/studio cannot be used")
    monkeypatch.setenv(ENV_ARTIFACTS_URL, f"s3://{s3.new_bucket()}/studio")
    assert check(data_dir, capsys)[0] == 0
