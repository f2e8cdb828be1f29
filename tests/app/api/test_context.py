"""The REST predict with the turn before the question: `context` with `text`, `contexts` with
`texts`; used by a project that encodes context, reported either way, refused when malformed."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from app.services.projects import projects

DEMO = "/api/v1/projects/" + quote("Demo: Acme support")
ORDER = "Shall I cancel your order?"
HUMAN = "Would you like to talk to a person?"


def test_a_context_turns_the_same_answer_into_different_intents(client, serving_state, demo):
    projects.set_settings(serving_state.db, demo, {"encode_context": "on"})
    tops = []
    for context in (ORDER, HUMAN):
        r = client.post(f"{DEMO}/predict", json={"text": "yes please", "context": context})
        assert r.status_code == 200
        row = r.json()["predictions"][0]
        assert (row["text"], row["context"], row["context_used"]) == ("yes please", context, True)
        tops.append(row["top"])
    assert tops[0] != tops[1]
    many = client.post(
        f"{DEMO}/predict", json={"texts": ["yes please", "yes please"], "contexts": [ORDER, HUMAN]}
    )
    assert [p["top"] for p in many.json()["predictions"]] == tops


def test_without_a_context_the_prediction_has_no_context_keys(client):
    row = client.post(f"{DEMO}/predict", json={"text": "where is my parcel"}).json()
    assert not {"context", "context_used"} & set(row["predictions"][0])


def test_a_context_sent_to_a_project_that_does_not_use_it_is_reported_unused(client):
    r = client.post(f"{DEMO}/predict", json={"text": "yes please", "context": ORDER})
    assert r.status_code == 200 and r.json()["predictions"][0]["context_used"] is False


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"texts": ["yes"], "context": ORDER}, 422, "`context` goes with `text`"),
        ({"text": "yes", "contexts": [ORDER]}, 422, "`contexts` goes with `texts`"),
        ({"text": "yes", "context": 5}, 422, "context"),
        ({"texts": ["yes", "no"], "contexts": [ORDER]}, 400, "2 utterance\\(s\\) but 1 context"),
        ({"text": "yes", "context": "x" * 2001}, 400, "Context is longer than 2000 characters"),
    ],
)
def test_a_malformed_context_is_a_json_message(client, body, status, message):
    import re

    r = client.post(f"{DEMO}/predict", json=body)
    assert r.status_code == status
    assert re.search(message, r.json()["error"])
