"""Issue 73, item 3: no REST route answers 500 whatever the project went through. Every GET route
(enumerated from the app's own OpenAPI schema, not a list kept here) is asked for a project after
a retrain, an import, a bulk label and an undo. Before, ``GET /projects/{p}/batches`` answered
500 for everyone once a retrain was among its newest entries (the activity gives a retrain no
row count, where the REST model wanted a number)."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from app import worker
from app.services.labelling import data as data_svc
from app.services.projects import io as io_svc
from app.services.training import retrain_jobs
from tests.handles import live
from tests.samples import QUICK, make_tiny, write_csv

pytestmark = pytest.mark.slow


def _get_routes(api: Any) -> list[tuple[str, dict[str, Any]]]:
    """(path, its OpenAPI operation) of every GET route of the app."""
    return [
        (path, operations["get"])
        for path, operations in api.openapi()["paths"].items()
        if "get" in operations
    ]


def test_no_get_route_answers_500_after_a_retrain_an_import_a_bulk_label_and_an_undo(
    client, serving_state, tiny_encoder, tmp_path, caplog
):
    project = make_tiny(serving_state, encoder=tiny_encoder)
    base = f"/api/v1/projects/{quote(project)}"
    # a retrain (the worker's own run of the job)
    view, _ = retrain_jobs.request_retrain(
        serving_state.training, live(serving_state, project), QUICK, enqueue=False
    )
    worker.execute_job(serving_state, view.id)
    assert retrain_jobs.job(serving_state.training, view.id).status == "succeeded"
    # an import (the Data tab's and the CLI's)
    rows = [("where is my new card", "card_lost", "train"), ("hey there", "", "unlabelled")]
    io_svc.import_file(
        serving_state.db, live(serving_state, project), write_csv(tmp_path / "more.csv", rows)
    )
    # a bulk label, then its undo
    ids = [data_svc.utterance_id(serving_state.db, live(serving_state, project), "hey there")]
    body = {"ids": ids, "intents": ["greeting"]}
    preview = client.post(f"{base}/label/bulk", json={**body, "preview": True}).json()
    done = client.post(f"{base}/label/bulk", json={**body, "expected": preview["change"]})
    assert done.status_code == 200, done.text
    undone = client.post(f"{base}/undo", json={"batch": done.json()["batch"]})
    assert undone.status_code == 200, undone.text

    values = {"project": project, "job_id": str(view.id), "user": "local", "intent": "greeting"}
    routes = _get_routes(client.app)
    assert {"/api/v1/projects/{project}/batches", "/api/v1/jobs/{job_id}"} <= {p for p, _ in routes}
    wrong = []
    answering = TestClient(client.app, raise_server_exceptions=False)  # a 500 as a client sees it
    with caplog.at_level(logging.ERROR):
        for path, op in routes:
            segments = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
            url = path.format(**{name: quote(values[name], safe="") for name in segments})
            answer = answering.get(url)
            if answer.status_code >= 500:
                wrong.append((path, answer.status_code, answer.text[:160]))
    assert wrong == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    # the retrain is in the project's activity, with no row count: it changed no utterance
    listed = client.get(f"{base}/batches").json()["batches"]
    assert [b["rows"] for b in listed if b["action"].startswith("retrain")] == [None]
    assert {"import", "label", "undo", "retrain"} <= {b["action"] for b in listed}, listed
