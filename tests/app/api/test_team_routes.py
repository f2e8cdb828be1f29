"""Issue 28 item 6: the REST routes of a team's daily work, on a real SQLite project and the real
encoder: projects listed and created (admin only), a bulk label that applies only what its
preview said and one undo that reverts it, a version activated (and which encoder serves it), an
export in a file and an agent format, a read-only project's 409, the health check without a
token, and an unknown ``/api/v1`` path answered as JSON."""

from __future__ import annotations

import io
import zipfile
from urllib.parse import quote

import pytest

from app.services.labelling import data as data_svc
from app.services.projects import bundles as bundle_svc
from tests.app.api.conftest import bearer
from tests.handles import live

DEMO = "/api/v1/projects/" + quote("Demo: Acme support")
NEW_TEXTS = ["parcel never came", "where did my box go", "package lost in the post"]


def _unlabelled(client, texts):
    for text in texts:
        r = client.post(f"{DEMO}/label", json={"text": text, "split": "unlabelled"})
        assert r.status_code == 200, r.text
    rows = client.get(f"{DEMO}/utterances", params={"split": "unlabelled"}).json()["utterances"]
    return {r["text"]: r["id"] for r in rows if r["text"] in texts}


def _intents_of(client, ids, headers=None):
    got = client.get(f"{DEMO}/utterances", params={"limit": 10_000}, headers=headers)
    rows = got.json()["utterances"]
    return {r["id"]: r["intents"] for r in rows if r["id"] in ids}


def test_a_bulk_label_applies_what_its_preview_said_and_one_undo_reverts_it(client):
    ids = _unlabelled(client, NEW_TEXTS)
    labelled = client.post(
        f"{DEMO}/label", json={"text": "my parcel is late", "intents": ["track_order"]}
    ).json()["id"]
    body = {"ids": [*ids.values(), labelled], "intents": ["lost_parcel"], "create": True}

    r = client.post(f"{DEMO}/label/bulk", json=body)
    assert r.status_code == 422 and "preview first" in r.json()["error"]
    preview = client.post(f"{DEMO}/label/bulk", json={**body, "preview": True}).json()
    assert preview["applied"] is False and preview["batch"] is None
    assert sorted(preview["change"]) == sorted(ids.values()) and preview["left"] == [labelled]
    assert preview["summary"].startswith("4 selected: 3 unlabelled will become lost_parcel")
    assert all(not v for v in _intents_of(client, ids.values()).values())  # nothing changed yet

    # someone labels one of them meanwhile: the old preview no longer holds, nothing changes
    client.post(f"{DEMO}/label", json={"text": NEW_TEXTS[0], "intents": ["track_order"]})
    stale = client.post(f"{DEMO}/label/bulk", json={**body, "expected": preview["change"]})
    assert stale.status_code == 409 and "Preview again" in stale.json()["error"]
    assert _intents_of(client, [ids[NEW_TEXTS[1]]]) == {ids[NEW_TEXTS[1]]: []}

    again = client.post(f"{DEMO}/label/bulk", json={**body, "preview": True}).json()
    done = client.post(f"{DEMO}/label/bulk", json={**body, "expected": again["change"]})
    assert done.status_code == 200 and done.json()["applied"] is True
    assert sorted(done.json()["change"]) == sorted([ids[NEW_TEXTS[1]], ids[NEW_TEXTS[2]]])
    after = _intents_of(client, [*ids.values(), labelled])
    assert after == {
        ids[NEW_TEXTS[0]]: ["track_order"],
        ids[NEW_TEXTS[1]]: ["lost_parcel"],
        ids[NEW_TEXTS[2]]: ["lost_parcel"],
        labelled: ["track_order"],  # protected: not relabelled without relabel_labelled
    }

    undone = client.post(f"{DEMO}/undo", json={"batch": done.json()["batch"]})
    assert undone.status_code == 200 and "2" in undone.json()["message"]
    assert _intents_of(client, [ids[NEW_TEXTS[1]], ids[NEW_TEXTS[2]]]) == {
        ids[NEW_TEXTS[1]]: [],
        ids[NEW_TEXTS[2]]: [],
    }
    assert _intents_of(client, [ids[NEW_TEXTS[0]]]) == {ids[NEW_TEXTS[0]]: ["track_order"]}
    r = client.post(f"{DEMO}/undo", json={"batch": "no-such-batch"})
    assert r.status_code in (400, 404) and "error" in r.json()


def test_one_utterance_is_deleted_and_its_undo_brings_it_back_under_its_id(team):
    """Issue 56 row 17: REST could not delete one utterance. It does, through the Data tab's
    service and front door (designer; a test row only when confirmed), and the answer's batch
    undoes it."""
    client, tokens = team
    dana, vic = bearer(tokens["dana"]), bearer(tokens["vic"])
    body = {"text": "my parcel never came", "intents": ["track_order"]}
    row = client.post(f"{DEMO}/label", json=body, headers=dana).json()
    test_row = client.post(
        f"{DEMO}/label", json={**body, "text": "box is late", "split": "test"}, headers=dana
    ).json()
    url = f"{DEMO}/utterances/{row['id']}"

    assert client.delete(url, headers=vic).status_code == 403
    assert client.delete(f"{DEMO}/utterances/999999", headers=dana).status_code == 404
    gone = client.delete(url, headers=dana)
    assert gone.status_code == 200, gone.text
    assert gone.json()["message"] == (
        f"Deleted #{row['id']} 'my parcel never came' (track_order, train); undo brings it back."
    )
    assert row["id"] not in _intents_of(client, [row["id"]], vic)

    refused = client.delete(f"{DEMO}/utterances/{test_row['id']}", headers=dana)
    assert refused.status_code == 400
    assert refused.json()["error"].endswith("Send confirm_test=true to delete it.")
    assert _intents_of(client, [test_row["id"]], vic) == {test_row["id"]: ["track_order"]}
    confirmed = {"confirm_test": "true"}
    deleted = client.delete(f"{DEMO}/utterances/{test_row['id']}", params=confirmed, headers=dana)
    assert deleted.status_code == 200

    undone = client.post(f"{DEMO}/undo", json={"batch": gone.json()["batch"]}, headers=dana)
    assert undone.status_code == 200, undone.text
    assert _intents_of(client, [row["id"]], vic) == {row["id"]: ["track_order"]}  # the same id


def test_a_stale_bulk_preview_answers_409_and_a_malformed_one_400(client, serving_state, demo):
    """Issue 45 row 10: applying a preview whose rows changed since (one labelled, one deleted)
    is refused with 409 and a clear message, nothing changed; a token no preview gives, or an
    intent name no project may have, is bad input: 400."""
    ids = _unlabelled(client, NEW_TEXTS)
    body = {"ids": list(ids.values()), "intents": ["lost_parcel"], "create": True}
    token = client.post(f"{DEMO}/label/bulk", json={**body, "preview": True}).json()["token"]

    client.post(f"{DEMO}/label", json={"text": NEW_TEXTS[0], "intents": ["track_order"]})
    r = client.post(f"{DEMO}/label/bulk", json={**body, "token": token})
    assert r.status_code == 409 and "Preview again" in r.json()["error"]

    token = client.post(f"{DEMO}/label/bulk", json={**body, "preview": True}).json()["token"]
    data_svc.delete_utterance(serving_state.db, live(serving_state, demo), ids[NEW_TEXTS[1]])
    r = client.post(f"{DEMO}/label/bulk", json={**body, "token": token})
    assert r.status_code == 409, r.text
    assert "deleted since the preview" in r.json()["error"] and "Preview again" in r.json()["error"]
    assert _intents_of(client, [ids[NEW_TEXTS[2]]]) == {ids[NEW_TEXTS[2]]: []}  # nothing changed

    body = {"ids": [ids[NEW_TEXTS[2]]], "intents": ["lost_parcel"], "create": True}
    r = client.post(f"{DEMO}/label/bulk", json={**body, "token": "not a token"})
    assert r.status_code == 400 and "not a preview's token" in r.json()["error"]
    long = {**body, "intents": ["x" * 500]}
    token = client.post(f"{DEMO}/label/bulk", json={**long, "preview": True}).json()["token"]
    r = client.post(f"{DEMO}/label/bulk", json={**long, "token": token})
    assert r.status_code == 400 and "at most" in r.json()["error"]
    r = client.post(f"{DEMO}/label/bulk", json={"ids": [10**9], "intents": [], "preview": True})
    assert r.status_code == 404  # an id that never was: no preview to be stale
    assert _intents_of(client, [ids[NEW_TEXTS[2]]]) == {ids[NEW_TEXTS[2]]: []}


def test_projects_are_listed_for_a_viewer_and_created_by_an_admin_only(team):
    client, tokens = team
    listed = client.get("/api/v1/projects", headers=bearer(tokens["vic"]))
    assert listed.status_code == 200
    demo = next(p for p in listed.json()["projects"] if p["name"] == "Demo: Acme support")
    assert demo["n_intents"] == 10 and demo["read_only"] is False
    assert demo["active_version"] is None and demo["n_train"] > 0

    r = client.post("/api/v1/projects", json={"name": "shop"}, headers=bearer(tokens["dana"]))
    assert r.status_code == 403 and "needs the admin role" in r.json()["error"]
    r = client.post("/api/v1/projects", json={"name": "shop"}, headers=bearer(tokens["admin"]))
    assert r.status_code == 201
    assert r.json() == {
        "name": "shop",
        "base_encoder": "minilm",
        "read_only": False,
        "n_intents": 0,
        "n_train": 0,
        "n_test": 0,
        "n_unlabelled": 0,
        "multi_label": False,
        "active_version": None,
        "encoding": None,  # an empty project has no row to encode (issue 72)
    }
    again = client.post("/api/v1/projects", json={"name": "shop"}, headers=bearer(tokens["admin"]))
    assert again.status_code == 409 and "already exists" in again.json()["error"]
    r = client.post(
        "/api/v1/projects",
        json={"name": "x", "base_encoder": "nope"},
        headers=bearer(tokens["admin"]),
    )
    assert r.status_code == 400

    def seen_by_vic() -> list[str]:
        found = client.get("/api/v1/projects", headers=bearer(tokens["vic"])).json()
        return [p["name"] for p in found["projects"]]

    # a new project is its members' only: vic sees it once an admin adds him
    assert "shop" not in seen_by_vic()
    shop = "/api/v1/projects/shop"
    assert client.get(f"{shop}/utterances", headers=bearer(tokens["vic"])).status_code == 404
    added = client.put(f"{shop}/members/vic", json={}, headers=bearer(tokens["admin"]))
    assert added.status_code == 200 and "vic is now a viewer in shop" in added.json()["message"]
    assert "shop" in seen_by_vic() and "x" not in seen_by_vic()


def test_an_export_comes_as_a_file_in_the_format_asked(client):
    import csv

    got = client.get(f"{DEMO}/export")
    assert got.status_code == 200
    assert got.headers["content-disposition"].endswith(".csv")
    exported = {row["text"] for row in csv.DictReader(io.StringIO(got.text))}
    listed = client.get(f"{DEMO}/utterances", params={"limit": 10_000}).json()["utterances"]
    assert exported == {u["text"] for u in listed}

    lex = client.get(f"{DEMO}/export", params={"format": "lex-v2"})
    assert lex.status_code == 200 and lex.headers["content-disposition"].endswith(".zip")
    with zipfile.ZipFile(io.BytesIO(lex.content)) as z:
        assert any(name.endswith("Intent.json") for name in z.namelist())

    r = client.get(f"{DEMO}/export", params={"format": "docx"})
    assert r.status_code == 400 and "Unknown export format 'docx'" in r.json()["error"]


EXPORTS = {f: f for f in ("csv", "jsonl", "yml", "zip", "slots.yml")}
EXPORTS |= {f: "zip" for f in ("dialogflow-es", "dialogflow-cx", "lex-v2")}
EXPORTS |= {f: "json" for f in ("dialogflow-cx-json", "watson", "luis", "clu")}


def test_a_project_and_intents_named_in_cyrillic_export_in_every_format(client):
    """Issue 56 row 13: every export of a project named in Cyrillic answered 400 "'latin-1'
    codec can't encode" (the note names the file; headers are Latin-1). The name comes as RFC
    6266 ``filename*`` beside an ASCII ``filename``, the note percent-encoded UTF-8."""
    from urllib.parse import unquote

    assert client.post("/api/v1/projects", json={"name": "Проект"}).status_code == 201
    url = "/api/v1/projects/" + quote("Проект")
    for text, intent in [("привет", "приветствие"), ("пока", "прощание")]:
        body = {"text": text, "intents": [intent], "create": True}
        assert client.post(f"{url}/label", json=body).status_code == 200
    for fmt, suffix in EXPORTS.items():
        got = client.get(f"{url}/export", params={"format": fmt})
        assert got.status_code == 200, (fmt, got.text)
        disposition = got.headers["content-disposition"]
        assert disposition == (
            f'attachment; filename="Proekt.{suffix}"; '
            f"filename*=UTF-8''{quote(f'Проект.{suffix}')}"
        ), fmt
        raw = got.headers["x-export-note"]
        assert raw.isascii() and "Проект" not in raw
        note = unquote(raw)
        if fmt == "slots.yml":
            assert note == "Exported the slot book and 0 template(s).", note
        else:
            assert note.startswith(f"Exported 2 utterance(s) to Проект.{suffix} as "), note
        if fmt == "lex-v2":  # Lex names are ASCII: the note names each Cyrillic intent
            assert "'приветствие' -> 'intent'" in note, note


def test_a_read_only_project_answers_409_and_health_and_unknown_paths_answer_json(
    client, serving_state, demo, tmp_path
):
    bundle = tmp_path / "demo.zip"
    bundle_svc.export_bundle(serving_state.live, demo, bundle)
    name = bundle_svc.import_bundle(serving_state.factories, bundle, name="frozen copy")
    url = "/api/v1/projects/" + quote(name)
    r = client.post(f"{url}/label", json={"text": "hello", "intents": ["greeting"]})
    assert r.status_code == 409 and "read-only" in r.json()["error"]
    assert client.post(f"{url}/versions/base/activate").status_code == 409
    assert client.post(f"{url}/predict", json={"text": "hello"}).status_code == 200

    health = client.get("/api/v1/health").json()
    assert health["ok"] and health["ready"] and health["down"] == []
    assert health["dependencies"] == {"database": "up", "model_store": "up", "queue": "up"}
    for method, path in (("GET", "/api/v1/nope"), ("POST", "/api/v1/projects/x/y/z")):
        r = client.request(method, path)
        assert r.status_code == 404
        assert r.json() == {"error": f"No API route {method} {path}: see /docs."}


def test_health_needs_no_token_and_everything_else_still_does(team):
    client, _ = team
    assert client.get("/api/v1/health").status_code == 200
    assert client.get("/api/v1/ready").status_code == 200
    assert client.get("/api/v1/nope").status_code == 401
    assert client.get("/api/v1/projects").status_code == 401


@pytest.mark.slow
def test_a_version_is_activated_and_versions_say_which_encoder_serves(client, serving_state):
    from app import worker
    from app.services.projects.projects import set_settings
    from app.services.training import retrain_jobs
    from tests.samples import QUICK, make_tiny

    make_tiny(serving_state)
    job, _ = retrain_jobs.request_retrain(
        serving_state.training, live(serving_state, "tiny"), QUICK, enqueue=False
    )
    worker.execute_job(serving_state, job.id)
    version = retrain_jobs.job(serving_state.training, job.id).model_version_id
    url = "/api/v1/projects/tiny"

    rows = client.get(f"{url}/versions").json()["versions"]
    assert [(r["version"], r["active"]) for r in rows] == [(version, True)]
    int8 = rows[0]["serving"]
    assert int8 in ("int8", "fp32")
    set_settings(serving_state.db, live(serving_state, "tiny"), {"serve_int8": "off"})
    assert client.get(f"{url}/versions").json()["versions"][0]["serving"] == "fp32"

    r = client.post(f"{url}/versions/base/activate")
    assert r.status_code == 200 and r.json() == {"message": "Active model: frozen base encoder."}
    rows = client.get(f"{url}/versions").json()["versions"]
    assert rows[0]["active"] is False and rows[0]["serving"] is None
    r = client.post(f"{url}/versions/v{version}/activate")
    assert r.status_code == 200 and f"v{version}" in r.json()["message"]
    assert client.get(f"{url}/versions").json()["versions"][0]["active"] is True
    assert client.post(f"{url}/versions/{version + 99}/activate").status_code == 404
    r = client.post(f"{url}/versions/latest/activate")
    assert r.status_code == 400 and "is no version" in r.json()["error"]
