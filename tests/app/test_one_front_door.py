"""Issue 43: one rule decides who may change an item, and every write path asks it. A team's
items on the demo project: one accepted from two annotators' agreement, one disputed, one open
(one answer of two). A designer who is neither (dana) tries every door to change them — the
Label tab, the Data tab's edit, delete and bulk label, the Map's lasso and move, a Design fix,
the Activity tab's undo, REST label and bulk label, an import that relabels — and each refuses
or leaves them as they are, with nothing stored; an annotator cannot change an answer once the
item is accepted, nor decide a dispute she is a party to."""

from __future__ import annotations

import dataclasses
import re

import pytest
from fastapi.testclient import TestClient

from app.access import auth
from app.services.labelling import data as data_svc
from app.services.labelling import history, team_answers
from app.services.labelling import team as team_svc
from app.services.projects import members
from storage.team import answers
from tests.handles import live

TEAM = ("ana", "ben")


class Request:
    """What Gradio passes a callback: the signed-in name."""

    def __init__(self, username: str) -> None:
        self.username = username


@pytest.fixture
def door(serving_state, demo):
    """A multi-user app on the demo's data: admin, ana and ben (annotators), dana (a designer
    who is neither), all members; three overlap items: accepted, disputed, open."""
    from app.serving.state import ServingState

    multi = ServingState.open(
        dataclasses.replace(serving_state.settings, multi_user=True), database=serving_state.db
    )
    multi.training.enqueue = serving_state.training.enqueue
    auth.ensure_admin(multi.db, "admin-password")
    who = {n: auth.add_user(multi.db, n, "designer", f"{n}-password") for n in (*TEAM, "dana")}
    for name in who:
        members.add_member(multi.db, demo, name)
    data_svc.create_intent(multi.db, demo, "refund")  # what the write paths below label with
    team_svc.assign(multi.db, demo, list(TEAM), overlap=1.0, limit=3)
    ana, ben = (live(multi, str(demo), who[n]) for n in TEAM)
    accepted, disputed, opened = sorted(team_svc.open_items(multi.db, ana))
    for uid, (a, b) in {
        accepted: ("track_order", "track_order"),
        disputed: ("refund", None),
    }.items():
        team_svc.submit(multi.db, ana, uid, "label", [a])
        team_svc.submit(multi.db, ben, uid, "oos" if b is None else "label", [b] if b else [])
    team_svc.submit(multi.db, ana, opened, "label", ["track_order"])
    items = {"accepted": accepted, "disputed": disputed, "open": opened}
    yield multi, who, items
    multi.close()


def _state(serving_state, demo, ids) -> tuple:
    """What must not move: the items' intents, splits and versions, every answer, the κ."""
    rows = {r["id"]: r for r in data_svc.table(serving_state.db, demo)}
    with serving_state.db.session() as s:
        given = [(a.utterance_id, a.annotator, a.action, a.intents) for a in answers(s, demo.id)]
    kappa = [p.kappa for p in team_answers.measure(serving_state.db, demo).pairs]
    return (
        tuple((rows[i]["intents"], rows[i]["split"], rows[i]["version"]) for i in ids),
        given,
        kappa,
    )


def test_every_write_path_refuses_a_designer_who_may_not_change_the_item(door, demo, tmp_path):
    from app.api import create_api
    from app.services.design import conflicts
    from app.services.projects.io import import_file
    from app.ui.main import build_app
    from app.ui.queue_view import QueueSession

    serving_state, who, items = door
    ids = sorted(items.values())
    name = str(demo)
    dana = live(serving_state, name, who["dana"])
    fns: dict = {}
    for block_fn in build_app(serving_state).fns.values():
        if block_fn.fn is not None:
            fns.setdefault(block_fn.api_name or block_fn.name, block_fn.fn)
    as_dana = {"request": Request("dana")}
    before = _state(serving_state, demo, ids)
    refusals = []

    # the Label tab: a key on each item's card
    from app.services.queue import queue

    for uid in ids:
        card = queue.item(serving_state.live, dana, uid, review=True) or queue.item(
            serving_state.live, dana, uid
        )
        state = QueueSession(how="file", item=card)
        refusals.append(fns["suggestion"](name, state, **as_dana)[0])
    # the Data tab: save an edit, delete
    for uid in ids:
        row = next(r for r in data_svc.table(serving_state.db, demo) if r["id"] == uid)
        args = (name, uid, row["version"], row["text"], ["refund"], "train", True, "dana")
        refusals.append(fns["save_utterance"](*args, **as_dana))
        refusals.append(fns["delete"](name, uid, **as_dana)[0])
    # the Map's lasso (the Data tab's bulk label is the same preview): protected, left alone
    from app.ui import map_tab

    texts = {r["id"]: r["text"] for r in data_svc.table(serving_state.db, demo)}
    selected = ",".join(map(str, ids))
    shown, kept = map_tab.preview(serving_state.db, dana, selected, "refund", True, {})
    assert "3 you may not change now" in shown
    token = re.search(r"data-token='(\w+)'", shown).group(1)
    done = fns["map_label"](name, selected, "refund", True, kept, token, **as_dana)
    assert "Labelled 0 utterance(s)" in done[0] and "Left 3 you may not change" in done[0]
    refusals.append(fns["map_move"](name, ",".join(map(str, ids)), "test", **as_dana))
    # a Design fix
    for uid in ids:
        version = before[0][ids.index(uid)][2]
        fix = conflicts.Fix("relabel", "relabel", (uid,), ("refund",), (version,))
        with pytest.raises(PermissionError) as refused:
            conflicts.apply(serving_state.db, dana, fix, confirm_test=True)
        refusals.append(str(refused.value))
    # the Activity tab: undo the batch that accepted an item (an annotator's, not dana's)
    accepted_batch = next(
        a["batch"]
        for a in history.activity(serving_state.db, demo)
        if a["user"] in TEAM and a["rows"] == 1
    )
    refusals.append(fns["undo_selected"](name, accepted_batch, **as_dana))
    # an import that relabels what is already in the project
    relabel = tmp_path / "relabel.csv"
    relabel.write_text("text,label\n" + "".join(f'"{texts[i]}",refund\n' for i in ids))
    with auth.acting_as(auth.actor(serving_state.db, serving_state.settings.multi_user, "dana")):
        result = import_file(serving_state.db, dana, relabel, on_existing="relabel")
    assert result.updated == 0 and "Left 3 utterance(s) as they are" in " ".join(result.notes)
    # REST, with dana's token: one label, and a bulk label with its preview
    token_of = {n: auth.issue_token(serving_state.db, n) for n in ("dana",)}
    with TestClient(create_api(serving_state)) as client:
        h = {"Authorization": f"Bearer {token_of['dana']}"}
        url = f"/api/v1/projects/{demo.id}"
        for uid in ids:
            r = client.post(
                f"{url}/label", json={"text": texts[uid], "intents": ["refund"]}, headers=h
            )
            assert r.status_code == 403, r.text
            refusals.append(r.json()["error"])
        body = {"ids": ids, "intents": ["refund"], "relabel_labelled": True}
        seen = client.post(f"{url}/label/bulk", json={**body, "preview": True}, headers=h).json()
        assert sorted(seen["protected"]) == ids and seen["change"] == []
        applied = client.post(f"{url}/label/bulk", json={**body, "token": seen["token"]}, headers=h)
        assert applied.status_code == 200 and applied.json()["change"] == []

    assert _state(serving_state, demo, ids) == before  # nothing was stored, anywhere
    assert len(refusals) == 3 + 6 + 1 + 3 + 1 + 3
    for said in refusals:
        assert re.search(
            r"assigned to ana and ben|waits for review|only an admin can change it|"
            r"Nothing was changed|not waiting",
            said,
        ), said


def test_answers_are_final_once_accepted_and_a_party_never_decides_her_dispute(door, demo):
    serving_state, who, items = door
    ana, ben, dana = (live(serving_state, str(demo), who[n]) for n in ("ana", "ben", "dana"))
    before = _state(serving_state, demo, sorted(items.values()))
    from storage.guard import ItemLockedError

    with pytest.raises(ItemLockedError, match="answers are final"):
        team_svc.submit(serving_state.db, ana, items["accepted"], "label", ["refund"])
    with pytest.raises(ItemLockedError, match="another reviewer decides it"):
        team_svc.decide(serving_state.db, ben, items["disputed"], ["refund"])
    with pytest.raises(ItemLockedError, match="not waiting for review"):
        team_svc.decide(serving_state.db, dana, items["open"], ["refund"])
    assert _state(serving_state, demo, sorted(items.values())) == before  # κ too
    # a reviewer who did not answer decides; an admin may still change an accepted item
    assert "reviewed" in team_svc.decide(serving_state.db, dana, items["disputed"], ["refund"])
    admin = live(
        serving_state,
        str(demo),
        auth.actor(serving_state.db, serving_state.settings.multi_user, "admin"),
    )
    data_svc.label_utterance(serving_state.db, admin, items["accepted"], ["refund"])
    assert (
        next(r for r in data_svc.table(serving_state.db, demo) if r["id"] == items["accepted"])[
            "intents"
        ]
        == "refund"
    )
