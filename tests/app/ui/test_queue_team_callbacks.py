"""The Label tab in a team project (issue 47, item 9): an annotator's skip (Space) of her own
item is her answer, stored and undone like any; she can read her own answers under review in an
order of their own, where no key decides."""

from __future__ import annotations

import dataclasses

import pytest

from app.access import auth
from app.services.labelling import team
from app.services.projects.members import add_member
from app.services.queue import queue as queue_svc
from app.ui import queue_actions, queue_tab
from tests.handles import live


@pytest.fixture
def crew(serving_state, demo):
    """ana and ben share 5 overlap items of the demo (31 unlabelled), rita reviews."""
    who = {
        n: auth.add_user(serving_state.db, n, "designer", f"{n}-password")
        for n in ("ana", "ben", "rita")
    }
    for name in who:
        add_member(serving_state.db, demo, name)
    team.assign(serving_state.db, demo, ["ana", "ben"], overlap=0.5, limit=10)
    return {n: live(serving_state, demo.as_(u)) for n, u in who.items()}


def _answers(serving_state, p, uid):
    found = {d.id: d for d in team.disputes(serving_state.db, p)}
    return {g.annotator: g.action for g in found[uid].answers} if uid in found else {}


def test_an_annotators_skip_of_her_own_item_is_her_answer_and_undo_takes_it_back(
    serving_state, crew
):
    ana, ben = crew["ana"], crew["ben"]
    shared = set(team.open_items(serving_state.db, ana)) & set(
        team.open_items(serving_state.db, ben)
    )
    out = queue_tab.start(serving_state.live, ana, "file", None)
    while out.state.item.id not in shared:  # to an overlap item: her skip waits for ben's answer
        out = queue_actions.skip(serving_state.live, ana, out.state)
    uid = out.state.item.id
    out = queue_actions.skip(serving_state.live, ana, out.state)
    assert uid not in team.open_items(serving_state.db, ana)  # answered: it left her queue
    assert out.message.endswith(f"#{uid}: your answer is stored; it waits for a second opinion.")
    queue_svc.answer(serving_state.live, ben, uid, "take", ["track_order"])
    assert _answers(serving_state, crew["rita"], uid) == {
        "ana": "skip",
        "ben": "label",
    }  # a disagreement
    # undo takes back her skip: the item is hers to answer again, no longer disputed
    back = out
    while back.state.history[-1].id != uid:
        back = queue_actions.undo(serving_state.live, ana, back.state)
    back = queue_actions.undo(serving_state.live, ana, back.state)
    assert back.message.endswith(f"Undid: #{uid} skipped.")
    assert back.state.item.id == uid and uid in team.open_items(serving_state.db, ana)
    assert _answers(serving_state, crew["rita"], uid) == {}


def test_an_annotator_reads_her_own_disputed_answers_and_cannot_decide_them(serving_state, crew):
    ana, ben, rita = crew["ana"], crew["ben"], crew["rita"]
    uid = sorted(
        set(team.open_items(serving_state.db, ana)) & set(team.open_items(serving_state.db, ben))
    )[0]
    queue_svc.answer(serving_state.live, ana, uid, "take", ["track_order"])
    queue_svc.answer(serving_state.live, ben, uid, "oos")
    assert queue_svc.order(serving_state.live, ana, queue_svc.DISPUTES) == []  # not hers to decide
    out = queue_tab.start(serving_state.live, ana, queue_svc.MINE, None)
    assert out.state.item.id == uid
    assert "ana: track_order" in out.card and "ben: out_of_scope" in out.card
    assert "a reviewer who did not answer decides" in out.card
    assert out.progress.startswith("**1** of your answers under review")
    flagged = dataclasses.replace(out.state.item, out_of_scope=True, threshold=0.9)
    assert (
        "Looks out of scope"
        not in queue_tab.render(serving_state.db, ana, out.state.but(item=flagged)).card
    )
    refused = queue_actions.act(serving_state.live, "take", ana, out.state, ["refund_status"])
    assert "Nothing was stored" in refused.message
    assert _answers(serving_state, rita, uid) == {
        "ana": "label",
        "ben": "oos",
    }  # still waits for rita
    assert queue_tab.start(serving_state.live, ben, queue_svc.MINE, None).state.item.id == uid
    assert (
        queue_tab.start(serving_state.live, rita, queue_svc.MINE, None).state.item is None
    )  # none of hers
    assert queue_tab.start(serving_state.live, rita, queue_svc.DISPUTES, None).state.item.id == uid
