"""Issue 30 over REST: an admin assigns the demo project's unlabelled utterances to two
designers (dana, erin) with an overlap, a designer may not; each answers their own items with
their own token; the agreement endpoint's kappa is scikit-learn's on the answers sent; the
review queue holds exactly the disagreement; a reviewer's decision is one batch that ``/undo``
reverts; every answer downloads as JSONL."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from sklearn.metrics import cohen_kappa_score

from app.access import auth
from app.services.labelling import history
from tests.app.api.conftest import bearer

DEMO = "/api/v1/projects/" + quote("Demo: Acme support")
TEAM = f"{DEMO}/team"


@pytest.fixture
def crew(team, serving_state):
    """The multi-user API with a second designer, erin; yields (client, headers by name)."""
    client, tokens = team
    auth.add_user(serving_state.db, "erin", "designer", "erin-password")
    tokens = {**tokens, "erin": auth.issue_token(serving_state.db, "erin")}
    h = {name: bearer(token) for name, token in tokens.items()}
    assert client.put(f"{DEMO}/members/erin", json={}, headers=h["admin"]).status_code == 200
    return client, h


def _assigned(client, h, overlap=0.2):
    """Assign as admin; returns (dana's items, erin's items, the items both have)."""
    r = client.post(
        f"{TEAM}/assign",
        json={"annotators": ["dana", "erin"], "overlap": overlap},
        headers=h["admin"],
    )
    assert r.status_code == 200, r.text
    mine = {}
    for name in ("dana", "erin"):
        got = client.get(f"{TEAM}/next", params={"limit": 1000}, headers=h[name]).json()
        mine[name] = [item["id"] for item in got["items"]]
    both = sorted(set(mine["dana"]) & set(mine["erin"]))
    return mine["dana"], mine["erin"], both


def _answer(client, who, uid, answer, intents=()):
    body = {"id": uid, "answer": answer, "intents": list(intents)}
    return client.post(f"{TEAM}/answers", json=body, headers=who)


def _unlabelled_ids(client, h):
    rows = client.get(
        f"{DEMO}/utterances", params={"split": "unlabelled", "limit": 10_000}, headers=h["vic"]
    ).json()["utterances"]
    return [r["id"] for r in rows]


def test_an_admin_assigns_with_an_overlap_and_a_designer_or_viewer_may_not(crew):
    client, h = crew
    n = len(_unlabelled_ids(client, h))
    body = {"annotators": ["dana", "erin"], "overlap": 0.2}
    for refused in ("dana", "vic"):
        r = client.post(f"{TEAM}/assign", json=body, headers=h[refused])
        assert r.status_code == 403 and "needs the admin role" in r.json()["error"]
    nothing = client.get(f"{TEAM}/next", headers=h["dana"]).json()
    assert nothing == {"items": [], "assigned": 0, "answered": 0}  # the refusals assigned nothing

    r = client.post(f"{TEAM}/assign", json=body, headers=h["admin"])
    assert r.status_code == 200
    given, shared = r.json()["given"], r.json()["overlap"]
    assert shared == int(n * 0.2) and sum(given.values()) == n + shared
    assert abs(given["dana"] - given["erin"]) <= 1

    page = client.get(f"{TEAM}/next", params={"limit": 5}, headers=h["dana"]).json()
    assert (page["assigned"], page["answered"], len(page["items"])) == (given["dana"], 0, 5)
    ids = [item["id"] for item in page["items"]]
    assert ids == sorted(ids) and set(ids) <= set(_unlabelled_ids(client, h))
    assert client.get(f"{TEAM}/next", headers=h["vic"]).status_code == 403

    again = client.post(f"{TEAM}/assign", json=body, headers=h["admin"]).json()
    assert again == {"given": {"dana": 0, "erin": 0}, "overlap": 0}  # never assigned twice
    r = client.post(
        f"{TEAM}/assign", json={"annotators": ["vic"], "overlap": 0}, headers=h["admin"]
    )
    assert r.status_code == 400 and "designer role" in r.json()["error"]


def test_answers_agree_or_go_to_review_and_a_decision_is_undone_by_undo(crew, serving_state, demo):
    client, h = crew
    dana_items, _, both = _assigned(client, h)
    alone = [i for i in dana_items if i not in both]

    r = _answer(client, h["dana"], alone[0], "label", ["track_order"])
    assert r.status_code == 200
    assert r.json()["accepted"] is True and r.json()["labels"] == ["track_order"]
    r = _answer(client, h["erin"], alone[1], "label", ["track_order"])  # dana's, not erin's
    assert r.status_code == 403 and "to you" in r.json()["error"]
    assert alone[1] in [
        i["id"] for i in client.get(f"{TEAM}/next", headers=h["dana"]).json()["items"]
    ]
    assert _answer(client, h["vic"], alone[1], "skip").status_code == 403

    agreed, differ = both[:2]
    first = _answer(client, h["dana"], agreed, "label", ["track_order"]).json()
    assert first["accepted"] is False and first["labels"] == []  # waits for erin
    second = _answer(client, h["erin"], agreed, "label", ["track_order"]).json()
    assert second["accepted"] is True and second["labels"] == ["track_order"]
    _answer(client, h["dana"], differ, "label", ["cancel_order"])
    split = _answer(client, h["erin"], differ, "oos").json()
    assert split["accepted"] is False and "review" in split["message"]
    progress = client.get(f"{TEAM}/next", headers=h["dana"]).json()
    assert progress["answered"] == 3 and differ not in [i["id"] for i in progress["items"]]

    found = client.get(f"{TEAM}/agreement", headers=h["vic"]).json()
    assert (found["items"], found["disputed"], found["annotators"]) == (2, 1, ["dana", "erin"])
    (pair,) = found["pairs"]
    assert (pair["a"], pair["b"], pair["items"], pair["agreed"]) == ("dana", "erin", 2, 1)
    expected = cohen_kappa_score(["track_order", "cancel_order"], ["track_order", "out_of_scope"])
    assert pair["kappa"] == pytest.approx(expected)
    assert {i["intent"]: i["disputed"] for i in found["intents"]} == {
        "cancel_order": [differ],
        "out_of_scope": [differ],
        "track_order": [],
    }

    text = next(
        u["text"]
        for u in client.get(
            f"{DEMO}/utterances", params={"limit": 10_000}, headers=h["vic"]
        ).json()["utterances"]
        if u["id"] == differ
    )
    # a party to the dispute neither sees it in her review queue nor decides it
    assert client.get(f"{TEAM}/review", headers=h["dana"]).json() == {"disputes": []}
    mine = client.post(f"{TEAM}/review/{differ}", json={"intents": ["x"]}, headers=h["dana"])
    assert mine.status_code == 403 and "another reviewer decides it" in mine.json()["error"]
    review = client.get(f"{TEAM}/review", headers=h["admin"])
    assert review.json() == {
        "disputes": [
            {
                "id": differ,
                "text": text,
                "answers": [
                    {"annotator": "dana", "answer": "label", "intents": ["cancel_order"]},
                    {"annotator": "erin", "answer": "oos", "intents": ["out_of_scope"]},
                ],
            }
        ]
    }
    assert client.get(f"{TEAM}/review", headers=h["vic"]).status_code == 403

    r = client.post(f"{TEAM}/review/{agreed}", json={"intents": ["x"]}, headers=h["admin"])
    assert r.status_code == 403 and "not waiting for review" in r.json()["error"]
    decided = client.post(
        f"{TEAM}/review/{differ}", json={"intents": ["cancel_order"]}, headers=h["admin"]
    )
    assert decided.status_code == 200 and "reviewed" in decided.json()["message"]
    batch = decided.json()["batch"]
    assert client.get(f"{TEAM}/review", headers=h["admin"]).json() == {"disputes": []}
    assert differ not in _unlabelled_ids(client, h)
    audited = next(e for e in history.activity(serving_state.db, demo) if e["batch"] == batch)
    assert audited["user"] == "admin"  # the reviewer's decision, under their name

    undone = client.post(f"{DEMO}/undo", json={"batch": batch}, headers=h["admin"])
    assert undone.status_code == 200, undone.text
    assert differ in _unlabelled_ids(client, h)
    back = client.get(f"{TEAM}/review", headers=h["admin"]).json()["disputes"]
    assert [d["id"] for d in back] == [differ]  # waits for review again


def test_the_agreement_kappa_is_scikit_learns_on_every_overlap_answer(crew):
    client, h = crew
    _, _, both = _assigned(client, h, overlap=0.3)
    assert len(both) >= 6
    intents = ["track_order", "cancel_order", "refund_status"]
    dana = [intents[i % 3] for i in range(len(both))]
    erin = list(dana)
    erin[1], erin[4] = "track_order", "out_of_scope"  # two disagreements
    for uid, a, b in zip(both, dana, erin, strict=True):
        _answer(client, h["dana"], uid, "label", [a])
        if b == "out_of_scope":
            _answer(client, h["erin"], uid, "oos")
        else:
            _answer(client, h["erin"], uid, "label", [b])

    found = client.get(f"{TEAM}/agreement", headers=h["vic"]).json()
    (pair,) = found["pairs"]
    assert (pair["items"], pair["agreed"]) == (len(both), len(both) - 2)
    assert pair["kappa"] == pytest.approx(cohen_kappa_score(dana, erin))
    assert 0 < pair["kappa"] < 1
    assert found["disputed"] == 2 and found["alpha"] is not None
    worst = found["intents"][0]  # lowest agreement first; on a tie, the most disputed
    assert worst["intent"] == "cancel_order" and worst["disputed"] == [both[1], both[4]]
    # the review queue is a reviewer's: dana answered these, so hers holds none of them
    assert client.get(f"{TEAM}/review", headers=h["dana"]).json()["disputes"] == []
    review = client.get(f"{TEAM}/review", headers=h["admin"]).json()["disputes"]
    assert [d["id"] for d in review] == [both[1], both[4]]


def test_every_answer_downloads_as_one_json_line_with_the_accepted_label(crew):
    client, h = crew
    _, _, both = _assigned(client, h)
    agreed, differ = both[:2]
    _answer(client, h["dana"], agreed, "label", ["refund_status"])
    _answer(client, h["erin"], agreed, "label", ["refund_status"])
    _answer(client, h["dana"], differ, "skip")
    _answer(client, h["erin"], differ, "label", ["return_item"])

    # the raw annotations leave the app: an export, a designer's (a viewer reads the agreement)
    refused = client.get(f"{TEAM}/answers.jsonl", headers=h["vic"])
    assert refused.status_code == 403 and "needs the designer role" in refused.json()["error"]
    got = client.get(f"{TEAM}/answers.jsonl", headers=h["dana"])
    assert got.status_code == 200
    assert 'filename="Demo_Acme_support-answers.jsonl"' in got.headers["content-disposition"]
    records = [json.loads(line) for line in got.text.splitlines()]
    assert [
        (r["id"], r["annotator"], r["answer"], r["intents"], r["accepted"]) for r in records
    ] == [
        (agreed, "dana", "label", ["refund_status"], ["refund_status"]),
        (agreed, "erin", "label", ["refund_status"], ["refund_status"]),
        (differ, "dana", "skip", [], None),
        (differ, "erin", "label", ["return_item"], None),
    ]
    assert all(r["text"] and r["answered_at"] for r in records)
    assert (
        client.get("/api/v1/projects/nope/team/answers.jsonl", headers=h["dana"]).status_code == 404
    )
