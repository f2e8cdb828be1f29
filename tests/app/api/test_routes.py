"""The REST API against a real SQLite project and the real encoder: predictions shaped exactly
like a bundle's, a label that counts in the very next prediction, roles by API token, and every
refusal a JSON message with its status (never a traceback)."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from app.services.projects import bundles as bundle_svc
from core.bundle import load
from tests.app.api.conftest import bearer

DEMO = "/api/v1/projects/" + quote("Demo: Acme support")
QUERIES = ["where is my parcel", "I forgot my password", "can I speak to a person"]


def test_one_and_many_predictions_have_a_bundles_structure(client, serving_state, demo, tmp_path):
    bundle = tmp_path / "demo.zip"
    bundle_svc.export_bundle(serving_state.live, demo, bundle)
    with load(bundle) as predictor:
        expected = predictor.predict(QUERIES)

    one = client.post(f"{DEMO}/predict", json={"text": QUERIES[0]})
    many = client.post(f"{DEMO}/predict", json={"texts": QUERIES})

    assert one.status_code == many.status_code == 200
    got = [one.json()["predictions"][0], *many.json()["predictions"][1:]]
    for api_row, bundle_row in zip(got, expected, strict=True):
        assert set(api_row) == set(bundle_row)  # no extra key, none missing (nor null-filled)
        assert set(api_row["intents"][0]) == set(bundle_row["intents"][0])
        assert set(api_row["neighbours"][0]) == set(bundle_row["neighbours"][0])
        assert api_row["top"] == bundle_row["top"]
        assert api_row["labels"] == bundle_row["labels"]
        assert api_row["score"] == pytest.approx(bundle_row["score"], abs=1e-4)
    assert [r["text"] for r in many.json()["predictions"]] == QUERIES


def test_concurrent_one_line_predictions_share_micro_batches(client):
    import concurrent.futures

    texts = [f"{q} #{i}" for i in range(6) for q in QUERIES]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda t: client.post(f"{DEMO}/predict", json={"text": t}), texts))
    assert all(a.status_code == 200 for a in answers)
    assert [a.json()["predictions"][0]["text"] for a in answers] == texts
    sizes = client.app.state.batcher.sizes
    assert sum(sizes) == len(texts) and max(sizes) > 1  # some requests rode together


def test_a_label_counts_in_the_very_next_prediction(client):
    text = "do you sell moon rocks from the apollo missions"
    before = client.post(f"{DEMO}/predict", json={"text": text}).json()["predictions"][0]
    assert before["top"] != "moon_rocks"

    labelled = client.post(
        f"{DEMO}/label",
        json={"text": text, "intents": ["moon_rocks"], "split": "train", "create": True},
    )
    assert labelled.status_code == 200
    assert labelled.json()["intents"] == ["moon_rocks"] and labelled.json()["split"] == "train"

    after = client.post(f"{DEMO}/predict", json={"text": text}).json()["predictions"][0]
    assert after["top"] == "moon_rocks" and after["score"] == pytest.approx(1.0, abs=1e-3)
    listed = client.get(f"{DEMO}/utterances", params={"intent": "moon_rocks"}).json()
    assert [u["text"] for u in listed["utterances"]] == [text]


def test_unknown_project_is_404_and_bad_bodies_are_422_with_a_message(client):
    for body in ({"text": "hi"}, {"texts": ["hi", "bye"]}):
        r = client.post("/api/v1/projects/nope/predict", json=body)
        assert r.status_code == 404 and r.json() == {"error": "No project 'nope'."}
    assert client.get("/api/v1/projects/nope/versions").status_code == 404

    r = client.post(f"{DEMO}/predict", json={"text": "hi", "texts": ["hi"]})
    assert r.status_code == 422
    assert r.json() == {"error": "send either `text` (one utterance) or `texts` (a list)"}
    r = client.post(f"{DEMO}/predict", json={"text": "   "})
    assert r.status_code == 400 and r.json() == {"error": "Type an utterance to classify."}
    r = client.post(f"{DEMO}/label", json={"text": "hello there", "split": "archive"})
    assert r.status_code == 400 and "archive" in r.json()["error"]
    assert "Traceback" not in r.text and "SELECT" not in r.text


def test_train_queues_a_job_that_can_be_followed(client, serving_state):
    from app.services.training.retrain_jobs import job as stored_job

    assert client.get(f"{DEMO}/versions").json()["versions"] == []

    # ConvFiT by its name; a method it does not know is refused naming the ones it does
    wrong = client.post(f"{DEMO}/train", json={"method": "convfit2"})
    assert wrong.status_code == 400
    assert wrong.json()["error"].startswith("Unknown method 'convfit2': use convfit (ConvFiT")
    r = client.post(f"{DEMO}/train", json={"method": "convfit", "settings": {"epochs": 1}})
    assert r.status_code == 202 and r.json()["created"] is True
    job = r.json()["job"]
    assert job["status"] == "queued"

    again = client.post(f"{DEMO}/train", json={})
    assert again.status_code == 200  # one retrain per project at a time: the same job
    assert again.json() == {"job": job, "created": False}

    followed = client.get(f"/api/v1/jobs/{job['id']}")
    assert followed.status_code == 200 and followed.json()["id"] == job["id"]
    assert followed.json()["status"] == "queued" and followed.json()["percent"] == 0
    assert client.get("/api/v1/jobs/999").json() == {"error": "No job #999."}

    bad = client.post(f"{DEMO}/train", json={"settings": {"epochs": -3}})
    assert bad.status_code == 400 and "epochs" in bad.json()["error"]

    cancelled = client.post(f"/api/v1/jobs/{job['id']}/cancel")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert client.get(f"/api/v1/jobs/{job['id']}").json()["status"] == "cancelled"
    assert client.post("/api/v1/jobs/999/cancel").status_code == 404
    fresh = client.post(f"{DEMO}/train", json={})  # the project is free for a new retrain
    assert fresh.status_code == 202 and fresh.json()["job"]["id"] != job["id"]
    assert stored_job(serving_state.training, job["id"]).config["method"] == "convfit"
    assert (
        stored_job(serving_state.training, fresh.json()["job"]["id"]).config["method"] == "convfit"
    )
    # fast, ConvFiT's name before issue 55, still works for the clients that send it
    client.post(f"/api/v1/jobs/{fresh.json()['job']['id']}/cancel")
    older = client.post(f"{DEMO}/train", json={"method": "fast", "settings": {"epochs": 1}})
    assert older.status_code == 202
    assert (
        stored_job(serving_state.training, older.json()["job"]["id"]).config["method"] == "convfit"
    )


def test_versions_name_their_method_as_the_train_tab_does_a_fast_one_included(
    client, serving_state, demo
):
    """Issue 55: REST keeps a version's method as recorded (a client matching ``fast`` still
    finds it) and names it beside as the Train tab does: ConvFiT Stage 2."""
    from storage.versions import NewVersion, register_version

    with serving_state.db.write() as s:
        for method in ("fast", "convfit", "lora"):
            register_version(s, NewVersion(demo.id, None, method, "minilm", {}, {}, None, None, 1))
    rows = client.get(f"{DEMO}/versions").json()["versions"]
    assert [(r["method"], r["method_name"]) for r in rows] == [
        ("lora", "LoRA adapter"),
        ("convfit", "ConvFiT Stage 2"),
        ("fast", "ConvFiT Stage 2"),
    ]
    schema = client.get("/openapi.json").json()["components"]["schemas"]["Version"]
    assert "method_name" in schema["required"]


def test_train_with_the_queue_down_says_why_and_which_job(client, serving_state):
    """Redis down: the job is stored as failed with the real reason, and the answer says so (it
    was a bare 500 "Internal error"); once the queue is back, the next request queues anew."""
    import dataclasses
    import socket

    from app import worker

    with socket.socket() as probe:  # a port nothing listens on: Redis is down
        probe.bind(("127.0.0.1", 0))
        down = f"redis://127.0.0.1:{probe.getsockname()[1]}/0"
    working = serving_state.training.enqueue
    serving_state.training.enqueue = worker.queue_for(
        dataclasses.replace(serving_state.settings, queue_url=down)
    )
    r = client.post(f"{DEMO}/train", json={"method": "fast", "settings": {"epochs": 1}})
    assert r.status_code == 503, r.text
    job_id = r.json()["job_id"]
    assert r.json()["error"].startswith(f"Job #{job_id} failed: could not queue the job: ")
    assert "Connection" in r.json()["error"] and "Traceback" not in r.text
    stored = client.get(f"/api/v1/jobs/{job_id}").json()
    assert stored["status"] == "failed" and stored["message"] in r.json()["error"]

    serving_state.training.enqueue = working
    again = client.post(f"{DEMO}/train", json={"method": "fast", "settings": {"epochs": 1}})
    assert again.status_code == 202 and again.json()["job"]["id"] != job_id


def test_roles_by_token_viewer_predicts_but_may_not_label_or_train(team):
    client, tokens = team
    vic = bearer(tokens["vic"])
    body = {"text": "hello from the api test", "intents": ["greet"], "create": True}
    assert client.post(f"{DEMO}/predict", json={"text": "hi"}, headers=vic).status_code == 200

    r = client.post(f"{DEMO}/label", json=body, headers=vic)
    assert r.status_code == 403
    assert r.json() == {
        "error": "vic is a viewer: labelling needs the designer role. Nothing was changed."
    }
    assert client.post(f"{DEMO}/train", json={}, headers=vic).status_code == 403
    assert client.post("/api/v1/jobs/1/cancel", headers=vic).status_code == 403
    listed = client.get(f"{DEMO}/utterances", params={"search": "api test"}, headers=vic).json()
    assert listed == {"utterances": []}  # nothing was written

    dana = bearer(tokens["dana"])
    r = client.post(f"{DEMO}/label", json=body, headers=dana)
    assert r.status_code == 200 and r.json()["intents"] == ["greet"]


def test_no_or_bad_token_is_401_in_multi_user_mode(team):
    client, _ = team
    r = client.post(f"{DEMO}/predict", json={"text": "hi"})
    assert r.status_code == 401 and "Authorization: Bearer" in r.json()["error"]
    r = client.post(f"{DEMO}/predict", json={"text": "hi"}, headers=bearer("is_forged"))
    assert r.status_code == 401 and r.json() == {"error": "Unknown or revoked API token."}
    assert r.headers["WWW-Authenticate"] == "Bearer"


def test_a_batch_over_the_roles_cap_is_refused_with_the_reason(team):
    client, tokens = team
    texts = [f"where is parcel {i}" for i in range(201)]
    r = client.post(f"{DEMO}/predict", json={"texts": texts}, headers=bearer(tokens["vic"]))
    assert r.status_code == 400
    assert r.json() == {
        "error": "At most 200 utterances per call for a viewer (this call has 201): "
        "split them into smaller calls."
    }
    # a designer may send more in one call
    r = client.post(f"{DEMO}/predict", json={"texts": texts}, headers=bearer(tokens["dana"]))
    assert r.status_code == 200 and len(r.json()["predictions"]) == 201


def test_busy_is_429_with_retry_after(serving_state, demo):
    from fastapi.testclient import TestClient

    from app.api import create_api
    from app.serving.admission import Admission, Limits

    serving_state.live.admission = Admission(Limits(queued_texts=1))  # no batch fits
    with TestClient(create_api(serving_state)) as client:
        r = client.post(f"{DEMO}/predict", json={"texts": ["a parcel", "a refund"]})
    assert r.status_code == 429 and r.headers["Retry-After"] == "1"
    assert r.json()["error"].startswith("Busy: the server is working through other users'")


def test_docs_and_openapi_describe_every_route(client):
    paths = client.get("/openapi.json").json()["paths"]
    assert {
        "/api/v1/projects/{project}/predict",
        "/api/v1/projects/{project}/label",
        "/api/v1/projects/{project}/utterances",
        "/api/v1/projects/{project}/versions",
        "/api/v1/projects/{project}/train",
        "/api/v1/jobs/{job_id}",
    } <= set(paths)
    docs = client.get("/docs")
    assert docs.status_code == 200 and "/docs/static/swagger-ui-bundle.js" in docs.text
    train_in = client.get("/openapi.json").json()["components"]["schemas"]["TrainIn"]
    method = train_in["properties"]["method"]
    assert method["default"] == "convfit" and "convfit: ConvFiT Stage 2" in method["description"]
    assert "cdn" not in docs.text.lower()  # offline: Swagger UI's files are served here
    assert client.get("/docs/static/swagger-ui-bundle.js").status_code == 200


def test_the_rest_docs_table_of_routes_is_what_the_api_enforces():
    import re
    from pathlib import Path

    from app.api import project_routes, queue_routes, routes, settings_routes, team_routes
    from app.api.security import declared_roles

    readme = (Path(__file__).resolve().parents[3] / "docs/rest.md").read_text()
    table = readme.split("| route | what | role |", 1)[1].split("\n\n", 1)[0]
    documented = {}
    for line in table.splitlines()[2:]:
        route = re.search(r"`(GET|POST|PUT|DELETE) (/api/v1/[^`]+)`", line)
        assert route is not None, line
        documented[f"{route[1]} {route[2].replace('{p}', '{project}')}"] = line.split("|")[-2]
    declared = declared_roles(
        [
            *routes.router.routes,
            *project_routes.router.routes,
            *settings_routes.router.routes,
            *team_routes.router.routes,
            *queue_routes.router.routes,
        ]
    )
    assert {k: v.strip() for k, v in documented.items()} == declared


def test_a_designer_sets_an_intents_description_and_a_viewer_reads_it_but_may_not(team):
    client, tokens = team
    vic, dana = bearer(tokens["vic"]), bearer(tokens["dana"])
    url = f"{DEMO}/intents/track_order"
    r = client.put(url, json={"description": "Where is my parcel"}, headers=vic)
    assert r.status_code == 403 and "needs the designer role" in r.json()["error"]
    r = client.put(url, json={"description": "  Where is   my parcel "}, headers=dana)
    assert r.status_code == 200 and r.json()["description"] == "Where is my parcel"
    listed = client.get(f"{DEMO}/intents", headers=vic).json()["intents"]
    assert {"name": "track_order", "description": "Where is my parcel"}.items() <= next(
        i for i in listed if i["name"] == "track_order"
    ).items()
    r = client.put(url, json={"description": "x" * 501}, headers=dana)
    assert r.status_code == 400 and "at most 500 characters" in r.json()["error"]
    r = client.put(f"{DEMO}/intents/nope", json={"description": "x"}, headers=dana)
    assert r.status_code == 404 and r.json() == {"error": "No intent 'nope' in this project."}


def test_a_label_of_only_spaces_is_refused_not_stored_as_no_intent(client):
    """Issue 56, row 8: a label of only whitespace was stored as "no intent" without a word."""
    text = "do you sell moon rocks from the apollo missions"
    client.post(f"{DEMO}/label", json={"text": text, "intents": ["moon_rocks"], "create": True})
    for intents in (["   "], ["\u3000"], ["moon_rocks", " "]):
        refused = client.post(f"{DEMO}/label", json={"text": text, "intents": intents})
        assert refused.status_code == 400, refused.text
        assert "nothing visible" in refused.text
    rows = client.get(f"{DEMO}/utterances", params={"search": "moon rocks"}).json()
    assert [r["intents"] for r in rows["utterances"]] == [["moon_rocks"]]
