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
from app.ui import queue_tab
from tests.handles import live


@pytest.fixture
def crew(ctx, demo):
    """ana and ben share 5 overlap items of the demo (31 unlabelled), rita reviews."""
    who = {n: auth.add_user(ctx.db, n, "designer", f"{n}-password") for n in ("ana", "ben", "rita")}
    for name in who:
        add_member(ctx.db, demo, name)
    team.assign(ctx.db, demo, ["ana", "ben"], overlap=0.5, limit=10)
    return {n: live(ctx, demo.as_(u)) for n, u in who.items()}


def _answers(ctx, p, uid):
    found = {d.id: d for d in team.disputes(ctx.db, p)}
    return {g.annotator: g.action for g in found[uid].answers} if uid in found else {}


def test_an_annotators_skip_of_her_own_item_is_her_answer_and_undo_takes_it_back(ctx, crew):
    ana, ben = crew["ana"], crew["ben"]
    shared = set(team.open_items(ctx.db, ana)) & set(team.open_items(ctx.db, ben))
    out = queue_tab.start(ctx.live, ana, "file", None)
    while out.state.item.id not in shared:  # to an overlap item: her skip waits for ben's answer
        out = queue_tab.skip(ctx.live, ana, out.state)
    uid = out.state.item.id
    out = queue_tab.skip(ctx.live, ana, out.state)
    assert uid not in team.open_items(ctx.db, ana)  # answered: it left her queue
    assert out.message.endswith(f"#{uid}: your answer is stored; it waits for a second opinion.")
    queue_svc.answer(ctx.live, ben, uid, "take", ["track_order"])
    assert _answers(ctx, crew["rita"], uid) == {"ana": "skip", "ben": "label"}  # a disagreement
    # undo takes back her skip: the item is hers to answer again, no longer disputed
    back = out
    while back.state.history[-1].id != uid:
        back = queue_tab.undo(ctx.live, ana, back.state)
    back = queue_tab.undo(ctx.live, ana, back.state)
    assert back.message.endswith(f"Undid: #{uid} skipped.")
    assert back.state.item.id == uid and uid in team.open_items(ctx.db, ana)
    assert _answers(ctx, crew["rita"], uid) == {}


def test_an_annotator_reads_her_own_disputed_answers_and_cannot_decide_them(ctx, crew):
    ana, ben, rita = crew["ana"], crew["ben"], crew["rita"]
    uid = sorted(set(team.open_items(ctx.db, ana)) & set(team.open_items(ctx.db, ben)))[0]
    queue_svc.answer(ctx.live, ana, uid, "take", ["track_order"])
    queue_svc.answer(ctx.live, ben, uid, "oos")
    assert queue_svc.order(ctx.live, ana, queue_svc.DISPUTES) == []  # not hers to decide
    out = queue_tab.start(ctx.live, ana, queue_svc.MINE, None)
    assert out.state.item.id == uid
    assert "ana: track_order" in out.card and "ben: out_of_scope" in out.card
    assert "a reviewer who did not answer decides" in out.card
    assert out.progress.startswith("**1** of your answers under review")
    flagged = dataclasses.replace(out.state.item, out_of_scope=True, threshold=0.9)
    assert (
        "Looks out of scope" not in queue_tab.render(ctx.db, ana, out.state.but(item=flagged)).card
    )
    refused = queue_tab.act(ctx.live, "take", ana, out.state, ["refund_status"])
    assert "Nothing was stored" in refused.message
    assert _answers(ctx, rita, uid) == {"ana": "label", "ben": "oos"}  # still waits for rita
    assert queue_tab.start(ctx.live, ben, queue_svc.MINE, None).state.item.id == uid
    assert queue_tab.start(ctx.live, rita, queue_svc.MINE, None).state.item is None  # none of hers
    assert queue_tab.start(ctx.live, rita, queue_svc.DISPUTES, None).state.item.id == uid
