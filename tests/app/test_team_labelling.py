"""Issue 30: labelling as a team. An admin splits unlabelled utterances between annotators with
an overlap; each answer is stored apart from the accepted label; overlap items are accepted when
the annotators agree and otherwise wait for a reviewer, whose decision is audited and undoable;
agreement is measured on the overlap; a project nobody was assigned in is not touched."""

from __future__ import annotations

import json

import pytest
from sklearn.metrics import cohen_kappa_score

from app.access import auth
from app.access.auth import Actor
from app.report.team import agreement_section
from app.services.labelling import data as data_svc
from app.services.labelling import history, team, team_answers
from app.services.projects.io import destination, import_utterances
from app.services.projects.members import add_member
from storage.errors import StorageError
from storage.utterances import NewUtterance
from tests.handles import live

INTENTS = ["card_arrival", "card_linking", "exchange_rate", "top_up_failed"]
P = "team"


@pytest.fixture
def people(serving_state):
    """A project with 8 labelled and 100 unlabelled utterances, and ana, ben (designers), vic
    (a viewer) and rita (the reviewer, a designer)."""
    rows = [NewUtterance(f"labelled {i} {INTENTS[i % 4]}", (INTENTS[i % 4],)) for i in range(8)]
    rows += [NewUtterance(f"question number {i}", (), "unlabelled") for i in range(100)]
    import_utterances(serving_state.db, destination(serving_state.db, P), rows)
    out = {}
    for name, role in [("ana", "designer"), ("ben", "designer"), ("vic", "viewer")]:
        out[name] = auth.add_user(serving_state.db, name, role, f"{name}-password")
    out["rita"] = auth.add_user(serving_state.db, "rita", "designer", "rita-password")
    for name in out:
        add_member(serving_state.db, live(serving_state, P), name)
    return out


def as_(serving_state, who: Actor):
    """The team project as ``who`` sees it."""
    return live(serving_state, P, who)


def _row(serving_state, uid):
    return next(
        r for r in data_svc.table(serving_state.db, live(serving_state, P)) if r["id"] == uid
    )


def test_assign_splits_evenly_with_the_overlap_and_never_twice(serving_state, people):
    given = team.assign(serving_state.db, live(serving_state, P), ["ana", "ben"], overlap=0.2)
    assert given == {"ana": 60, "ben": 60, "overlap": 20}
    assert team.progress(serving_state.db, live(serving_state, P)) == {
        "ana": (60, 0),
        "ben": (60, 0),
    }
    assert len(team.open_items(serving_state.db, as_(serving_state, people["ana"]))) == 60
    shared = set(team.open_items(serving_state.db, as_(serving_state, people["ana"]))) & set(
        team.open_items(serving_state.db, as_(serving_state, people["ben"]))
    )
    assert len(shared) == 20
    assert team.assign(serving_state.db, live(serving_state, P), ["ana", "ben"], overlap=0.2) == {
        "ana": 0,
        "ben": 0,
        "overlap": 0,
    }
    with pytest.raises(ValueError, match="designer role"):
        team.assign(serving_state.db, live(serving_state, P), ["vic"], overlap=0)
    with pytest.raises(ValueError, match="two annotators"):
        team.assign(serving_state.db, live(serving_state, P), ["ana"], overlap=0.1)
    with pytest.raises(ValueError, match="not an active user"):
        team.assign(serving_state.db, live(serving_state, P), ["nobody"], overlap=0)


def test_answers_are_accepted_alone_or_on_agreement_and_disagreements_wait_for_review(
    serving_state, people
):
    team.assign(serving_state.db, live(serving_state, P), ["ana", "ben"], overlap=0.2)
    ana, ben = people["ana"], people["ben"]
    both = sorted(
        set(team.open_items(serving_state.db, as_(serving_state, ana)))
        & set(team.open_items(serving_state.db, as_(serving_state, ben)))
    )
    alone = next(
        i for i in team.open_items(serving_state.db, as_(serving_state, ana)) if i not in both
    )

    assert "→ card_arrival" in team.submit(
        serving_state.db, as_(serving_state, ana), alone, "label", ["card_arrival"]
    )
    assert (
        _row(serving_state, alone)["intents"] == "card_arrival"
    )  # accepted at once: not an overlap item

    agreed, differ, skipped = both[:3]
    msg = team.submit(serving_state.db, as_(serving_state, ana), agreed, "label", ["exchange_rate"])
    assert "waits for a second opinion" in msg
    assert (
        _row(serving_state, agreed)["split"] == "unlabelled"
    )  # one answer of two: nothing accepted yet
    msg = team.submit(serving_state.db, as_(serving_state, ben), agreed, "label", ["exchange_rate"])
    assert "everyone agreed" in msg and _row(serving_state, agreed)["intents"] == "exchange_rate"

    team.submit(serving_state.db, as_(serving_state, ana), differ, "label", ["card_arrival"])
    assert "goes to review" in team.submit(serving_state.db, as_(serving_state, ben), differ, "oos")
    team.submit(serving_state.db, as_(serving_state, ana), skipped, "label", ["top_up_failed"])
    team.submit(serving_state.db, as_(serving_state, ben), skipped, "skip")
    assert _row(serving_state, differ)["split"] == "unlabelled"
    waiting = team.disputes(serving_state.db, live(serving_state, P))
    assert [d.id for d in waiting] == [differ, skipped]
    assert [(g.annotator, g.shown()) for g in waiting[0].answers] == [
        ("ana", "card_arrival"),
        ("ben", "out_of_scope"),
    ]
    assert team.open_items(serving_state.db, as_(serving_state, ana))[:1] != [
        differ
    ]  # answered: out of ana's queue

    assert "reviewed" in team.decide(
        serving_state.db,
        as_(serving_state, people["rita"]),
        differ,
        ["card_arrival"],
        batch="review-1",
    )
    assert _row(serving_state, differ)["intents"] == "card_arrival"
    assert [d.id for d in team.disputes(serving_state.db, live(serving_state, P))] == [skipped]
    decision = next(
        e
        for e in history.activity(serving_state.db, live(serving_state, P))
        if e["batch"] == "review-1"
    )
    assert decision["user"] == "rita"  # audited under the reviewer's name and its own batch
    history.undo_batch(serving_state.db, as_(serving_state, people["rita"]), "review-1")
    assert [d.id for d in team.disputes(serving_state.db, live(serving_state, P))] == [
        differ,
        skipped,
    ]  # waits for review again
    with pytest.raises(StorageError, match="not waiting for review"):
        team.decide(serving_state.db, as_(serving_state, people["rita"]), agreed, ["card_linking"])


def test_an_answer_to_an_item_not_assigned_to_you_is_refused_and_stores_nothing(
    serving_state, people
):
    team.assign(serving_state.db, live(serving_state, P), ["ana", "ben"], overlap=0)
    ana, ben = people["ana"], people["ben"]
    bens = next(
        i
        for i in team.open_items(serving_state.db, as_(serving_state, ben))
        if i not in team.open_items(serving_state.db, as_(serving_state, ana))
    )
    with pytest.raises(StorageError, match="assigned to ben, not to you"):
        team.submit(serving_state.db, as_(serving_state, ana), bens, "label", ["card_arrival"])
    assert _row(serving_state, bens)["split"] == "unlabelled"
    assert team.progress(serving_state.db, live(serving_state, P))["ana"] == (50, 0)


def test_agreement_is_cohens_kappa_on_the_overlap_with_the_disputed_intents_listed(
    serving_state, people
):
    team.assign(serving_state.db, live(serving_state, P), ["ana", "ben"], overlap=0.2)
    ana, ben = people["ana"], people["ben"]
    both = sorted(
        set(team.open_items(serving_state.db, as_(serving_state, ana)))
        & set(team.open_items(serving_state.db, as_(serving_state, ben)))
    )
    a_said = [INTENTS[i % 4] for i in range(20)]
    b_said = list(a_said)
    for i in (1, 4, 7, 10, 13):  # 5 deliberate disagreements
        b_said[i] = "card_linking" if a_said[i] != "card_linking" else "exchange_rate"
    for uid, a, b in zip(both, a_said, b_said, strict=True):
        team.submit(serving_state.db, as_(serving_state, ana), uid, "label", [a])
        team.submit(serving_state.db, as_(serving_state, ben), uid, "label", [b])
    found = team_answers.measure(serving_state.db, live(serving_state, P))
    (pair,) = found.pairs
    assert (pair.a, pair.b, pair.items, pair.agreed) == ("ana", "ben", 20, 15)
    assert pair.kappa == pytest.approx(cohen_kappa_score(a_said, b_said))
    # by hand: observed 15/20; chance from each annotator's own label shares
    shares = [(a_said.count(x) / 20) * (b_said.count(x) / 20) for x in INTENTS]
    assert pair.kappa == pytest.approx((0.75 - sum(shares)) / (1 - sum(shares)))
    assert sorted(found.disputed) == sorted(both[i] for i in (1, 4, 7, 10, 13))
    assert sorted(d.id for d in team.disputes(serving_state.db, live(serving_state, P))) == sorted(
        found.disputed
    )
    worst = found.intents[0]  # card_linking is on one side of every disagreement
    assert worst.intent == "card_linking" and sorted(worst.disputed) == sorted(found.disputed)
    # the stakeholder report's section says the same
    section = agreement_section(team_answers.report_view(serving_state.db, live(serving_state, P)))
    assert f"<td class='num'>{pair.kappa:.2f}</td>" in section
    assert "<td>card_linking</td>" in section and "20 utterances were labelled" in section


def test_every_answer_exports_as_one_json_line_with_the_accepted_label(
    serving_state, people, tmp_path
):
    team.assign(serving_state.db, live(serving_state, P), ["ana", "ben"], overlap=0.2)
    ana, ben = people["ana"], people["ben"]
    uid = sorted(
        set(team.open_items(serving_state.db, as_(serving_state, ana)))
        & set(team.open_items(serving_state.db, as_(serving_state, ben)))
    )[0]
    team.submit(serving_state.db, as_(serving_state, ana), uid, "label", ["card_arrival"])
    team.submit(serving_state.db, as_(serving_state, ben), uid, "oos")
    lines = (
        team_answers.export_answers(
            serving_state.db, live(serving_state, P), tmp_path / "answers.jsonl"
        )
        .read_text()
        .splitlines()
    )
    records = [json.loads(line) for line in lines]
    assert [(r["annotator"], r["answer"], r["intents"]) for r in records] == [
        ("ana", "label", ["card_arrival"]),
        ("ben", "oos", ["out_of_scope"]),
    ]
    assert records[0]["text"] == "question number" + records[0]["text"][len("question number") :]
    assert records[0]["accepted"] is None  # in review: no accepted label yet


def test_a_project_nobody_was_assigned_in_is_not_a_team_project(serving_state, people):
    assert (
        not team.is_team_project(serving_state.db, live(serving_state, P))
        and team_answers.report_view(serving_state.db, live(serving_state, P)) is None
    )
    assert team.reserved(serving_state.db, live(serving_state, P)) == set()
    team.assign(serving_state.db, live(serving_state, P), ["ana"], overlap=0, limit=5)
    assert (
        team.is_team_project(serving_state.db, live(serving_state, P))
        and len(team.reserved(serving_state.db, live(serving_state, P))) == 5
    )


def test_the_label_queue_serves_your_items_first_and_settles_disputes_in_review(
    serving_state, demo
):
    """The Label tab's services in a team project (the demo: 31 unlabelled): each annotator's
    queue holds their items only, an answer to an overlap item waits, a disagreement shows in the
    review order with who said what, the reviewer's key decides, and undo takes back each."""
    from app.services.queue import queue

    who = {
        n: auth.add_user(serving_state.db, n, "designer", f"{n}-password")
        for n in ("ana", "ben", "rita")
    }
    for name in who:
        add_member(serving_state.db, demo, name)
    team.assign(serving_state.db, demo, ["ana", "ben"], overlap=0.5, limit=10)
    ana, ben, rita = (demo.as_(who[n]) for n in ("ana", "ben", "rita"))
    mine = set(team.open_items(serving_state.db, live(serving_state, ana)))
    order = queue.order(serving_state.live, live(serving_state, ana), "file", limit=50)
    assert set(order) == mine and len(mine) in (7, 8)  # 10 split evenly, 5 of them twice
    shared = sorted(mine & set(team.open_items(serving_state.db, live(serving_state, ben))))[0]
    card = queue.item(serving_state.live, live(serving_state, ana), shared)
    msg = queue.answer(
        serving_state.live,
        live(serving_state, ana),
        shared,
        "take",
        [card.suggestions[0].intent],
        batch="a1",
    )
    assert "second opinion" in msg and shared not in queue.order(
        serving_state.live, live(serving_state, ana), "file", limit=50
    )
    assert "goes to review" in queue.answer(
        serving_state.live, live(serving_state, ben), shared, "oos", batch="b1"
    )
    assert not set(queue.order(serving_state.live, live(serving_state, rita), "file", limit=50)) & (
        mine | {shared}
    )
    with pytest.raises(StorageError, match="waits for review"):  # a label by hand: refused
        queue.answer(serving_state.live, live(serving_state, rita), shared, "take", ["track_order"])
    found, _ = queue.next_item(serving_state.live, live(serving_state, rita), [], queue.DISPUTES)
    assert found is not None and found.id == shared
    assert found.answers == (f"ana: {card.suggestions[0].intent}", "ben: out_of_scope")
    assert found.suggestions[0].intent == card.suggestions[0].intent  # the answer first
    msg = queue.answer(
        serving_state.live,
        live(serving_state, rita),
        shared,
        "take",
        ["track_order"],
        batch="r1",
        how="disputes",
    )
    assert (
        "reviewed" in msg
        and queue.next_item(serving_state.live, live(serving_state, rita), [], queue.DISPUTES)[0]
        is None
    )
    queue.undo_answer(
        serving_state.db,
        live(serving_state, rita),
        utterance_id=shared,
        action="take",
        batch="r1",
        how="disputes",
    )
    assert (
        queue.next_item(serving_state.live, live(serving_state, rita), [], queue.DISPUTES)[0]
        is not None
    )
    queue.undo_answer(
        serving_state.db, live(serving_state, ana), utterance_id=shared, action="take", batch="a1"
    )
    assert shared in queue.order(serving_state.live, live(serving_state, ana), "file", limit=50)
    assert team.disputes(serving_state.db, live(serving_state, ana)) == []
