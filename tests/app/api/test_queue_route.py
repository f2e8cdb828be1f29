"""Issue 72 item 6: the labelling queue over REST, ``GET …/queue``: the Label tab's next items
for the caller, in the order asked, each with its card's suggestions, with the Label tab's
permissions (a viewer of the project reads them; a user of another project finds no project)."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from app.services.projects.projects import new_project
from app.services.queue import queue as queue_svc
from tests.app.api.conftest import bearer
from tests.handles import live

DEMO = "/api/v1/projects/" + quote("Demo: Acme support")


def test_the_queue_route_answers_the_label_tabs_next_items_with_their_suggestions(
    client, serving_state, demo
):
    got = client.get(f"{DEMO}/queue", params={"order": "useful", "limit": 5})
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["order"] == "useful" and len(body["items"]) == 5
    # what the Label tab shows: its first card, then the ids it has queued after it
    first, upcoming = queue_svc.next_item(
        serving_state.live, live(serving_state, demo), [], "useful"
    )
    assert first is not None
    assert [i["id"] for i in body["items"]] == [first.id, *upcoming][:5]
    card = body["items"][0]
    assert card["text"] == first.text and card["split"] == "unlabelled"
    assert [(s["intent"], s["example"]) for s in card["suggestions"]] == [
        (s.intent, s.example) for s in first.suggestions
    ]
    assert [s["score"] for s in card["suggestions"]] == pytest.approx(
        [s.score for s in first.suggestions]
    )
    assert card["predicted"] == list(first.predicted)
    # another order, and a refusal in words
    near = client.get(f"{DEMO}/queue", params={"order": "near", "near": "track_order"})
    near_first, _ = queue_svc.next_item(
        serving_state.live, live(serving_state, demo), [], "near", near="track_order"
    )
    assert near_first is not None
    assert near.status_code == 200 and near.json()["items"][0]["id"] == near_first.id
    bad = client.get(f"{DEMO}/queue", params={"order": "alphabetical"})
    assert bad.status_code == 400 and "Unknown order 'alphabetical'" in bad.json()["error"]
    no_intent = client.get(f"{DEMO}/queue", params={"order": "near"})
    assert no_intent.status_code == 400 and "Pick the intent" in no_intent.json()["error"]
    assert client.get(f"{DEMO}/queue", params={"limit": 101}).status_code == 422


def test_the_queue_route_answers_a_viewer_of_the_project_and_refuses_one_of_another(
    serving_state, demo, team
):
    client, tokens = team
    seen = client.get(f"{DEMO}/queue", params={"limit": 3}, headers=bearer(tokens["vic"]))
    assert seen.status_code == 200 and len(seen.json()["items"]) == 3  # as the tab shows her
    new_project(serving_state.db, "private")  # vic is no member of it
    other = client.get("/api/v1/projects/private/queue", headers=bearer(tokens["vic"]))
    assert other.status_code == 404 and other.json()["error"] == "No project 'private'."
    assert client.get(f"{DEMO}/queue").status_code == 401  # no token
