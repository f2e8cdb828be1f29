"""A server the app depends on goes down for real: it is reached through a TCP relay on loopback,
which the test closes (connections reset, new ones refused).

Issue 45, row 9: with PostgreSQL down, predict and job reads answered 500 and logged a traceback
each. They answer 503 with a message, as the health check does, with a token or without one,
and answer again once the database is back.

Issue 57, item 3: with the model store (an S3 bucket) down, predict answered 500 with two
tracebacks for a project whose new version the app had not loaded yet, a retrain failed with a
raw error, ``bundle export`` printed a traceback, and ``/health`` said 200. They answer 503 with
``Retry-After`` (the CLI: one line, exit 1), health names the model store, and all answer again
once the bucket is back."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.servers import Relay

pytestmark = pytest.mark.slow


@pytest.fixture
def studio(postgres, tmp_path):
    """The REST API on a PostgreSQL database reached through a :class:`Relay`, single-user and
    multi-user; yields (relay, single-user client, multi-user client, token, job id)."""
    from app.access import auth
    from app.api import create_api
    from app.config import load_settings
    from app.services.training import retrain_jobs
    from app.serving.state import ServingState
    from tests.handles import live
    from tests.samples import QUICK, make_tiny

    url = postgres.new_database()
    relay = Relay(("127.0.0.1", postgres.port))
    relayed = url.replace(f":{postgres.port}/", f":{relay.port}/")
    serving_state = ServingState.open(load_settings(tmp_path / "data", db_url=relayed))
    team = ServingState.open(
        dataclasses.replace(serving_state.settings, multi_user=True), database=serving_state.db
    )
    auth.ensure_admin(team.db, "admin-password")
    token = auth.issue_token(team.db, "admin")
    make_tiny(serving_state)
    job, _ = retrain_jobs.request_retrain(
        serving_state.training, live(serving_state, "tiny"), QUICK, enqueue=False
    )
    with TestClient(create_api(serving_state)) as single, TestClient(create_api(team)) as multi:
        multi.headers["Authorization"] = f"Bearer {token}"
        yield relay, single, multi, job.id
    relay.down()
    serving_state.close()


def test_predict_and_job_reads_answer_503_with_a_message_while_postgres_is_down(studio, caplog):
    relay, single, multi, job_id = studio
    for client in (single, multi):
        assert client.get(f"/api/v1/jobs/{job_id}").status_code == 200
    relay.down()
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        for client in (single, multi):
            answers = [
                client.get(f"/api/v1/jobs/{job_id}"),
                client.post("/api/v1/projects/tiny/predict", json={"text": "hello there"}),
                client.post("/api/v1/projects/tiny/predict", json={"texts": ["a", "b"]}),
                client.get("/api/v1/projects"),
            ]
            for answer in answers:
                assert answer.status_code == 503, (answer.request.url, answer.text)
                assert "database is not answering" in answer.json()["error"]
                assert answer.headers["Retry-After"]
            assert client.get("/api/v1/health").status_code == 503
    tracebacks = [r for r in caplog.records if r.exc_info and r.levelno >= logging.ERROR]
    assert not tracebacks, [r.getMessage() for r in tracebacks]
    relay.up()
    for client in (single, multi):
        assert client.get(f"/api/v1/jobs/{job_id}").status_code == 200


@pytest.fixture
def bucket_behind_relay(s3, tmp_path, monkeypatch):
    """A project whose version a worker trained into an S3 bucket, and the app that has not
    loaded it yet (its own data directory), both reaching the bucket through a :class:`Relay`;
    yields (relay, app context, the CLI's arguments for the app's data)."""
    from urllib.parse import urlsplit

    from app.config import load_settings
    from app.services.training import retrain_jobs
    from app.serving.state import ServingState
    from app.worker import execute_job, queue_for
    from tests.handles import live
    from tests.samples import QUICK, make_tiny

    endpoint = urlsplit(s3.endpoint)
    relay = Relay((endpoint.hostname or "127.0.0.1", endpoint.port or 80))
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{relay.port}")
    monkeypatch.setenv("INTENT_STUDIO_ARTIFACTS_URL", f"s3://{s3.new_bucket()}/studio")
    db_url = f"sqlite:///{tmp_path / 'studio.db'}"
    worker = ServingState.open(load_settings(tmp_path / "worker", db_url=db_url))
    make_tiny(worker)
    job, _ = retrain_jobs.request_retrain(
        worker.training, live(worker, "tiny"), QUICK, enqueue=False
    )
    execute_job(worker, job.id)
    assert retrain_jobs.job(worker.training, job.id).status == "succeeded"
    worker.close()
    app = ServingState.open(load_settings(tmp_path / "app", db_url=db_url))
    app.training.enqueue = queue_for(app.settings)
    yield relay, app, ["--data-dir", str(tmp_path / "app"), "--db-url", db_url]
    relay.down()
    app.close()


def test_the_model_store_down_answers_503_and_health_names_it(bucket_behind_relay, caplog, capsys):
    from app.api import create_api
    from app.cli import main

    relay, serving_state, cli = bucket_behind_relay
    relay.down()
    caplog.clear()
    with caplog.at_level(logging.WARNING), TestClient(create_api(serving_state)) as client:
        answers = [
            client.post("/api/v1/projects/tiny/predict", json={"text": "hello there"}),
            client.post("/api/v1/projects/tiny/train", json={"settings": {"epochs": 1}}),
        ]
        for answer in answers:
            assert answer.status_code == 503, (answer.request.url, answer.text)
            assert "model store" in answer.json()["error"]
            assert answer.headers["Retry-After"]
        health = client.get("/api/v1/health")
        assert health.status_code == 503 and health.json()["down"] == ["model_store"]
        assert health.json()["dependencies"]["database"] == "up"
        assert client.get("/api/v1/ready").status_code == 200  # what serves labels still does
        out = str(Path(cli[1]) / "b.zip")
        assert main([*cli, "bundle", "export", "--project", "tiny", "-o", out]) == 1
        err = capsys.readouterr().err
        assert err.startswith("error: The model store") and "Traceback" not in err
        tracebacks = [r for r in caplog.records if r.exc_info and r.levelno >= logging.ERROR]
        assert not tracebacks, [r.getMessage() for r in tracebacks]
        relay.up()
        serving_state.readiness.dependencies(max_age=0)  # health reads a fresh probe
        assert client.get("/api/v1/health").status_code == 200
        again = client.post("/api/v1/projects/tiny/predict", json={"text": "hello there"})
        assert again.status_code == 200, again.text
