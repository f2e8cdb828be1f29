"""A key press in the Label tab, as the app runs it (through the role guard): the project and
the user are resolved in one session and the answer, the item's new state and the next cards are
one writing transaction, so a key costs two database sessions (at most ten when a chunk of the
queue is ordered again, once every 20 keys: every row's order reads the project's new rows, the
pool, and checks its picks against the database, again when some were answered since); the stored label is the suggestion on the card, and the
next card the one the page showed next."""

from __future__ import annotations

import dataclasses

import pytest

from app.access import auth
from app.access.actions import LABEL
from app.services.labelling import data as data_svc
from app.services.projects.members import add_member
from app.services.queue.queue import OUT_OF_SCOPE
from app.services.queue.queue_order import CHUNK
from app.serving.state import ServingState
from app.ui import queue_actions, queue_tab
from app.ui.common import bind
from app.ui.guard import enforce, guarded
from tests.handles import live


class Request:
    def __init__(self, username: str) -> None:
        self.username = username


def _counting(serving_state: ServingState) -> list[str]:
    """Every database session ``serving_state`` opens from now on, by kind."""
    opened: list[str] = []
    for kind in ("session", "write", "reading"):
        own = getattr(serving_state.db, kind)

        def counted(*args, _own=own, _kind=kind, **kwargs):
            opened.append(_kind)
            return _own(*args, **kwargs)

        setattr(serving_state.db, kind, counted)
    return opened


def _labels(serving_state, project) -> dict[int, str]:
    return {
        r["id"]: r["intents"]
        for r in data_svc.table(serving_state.db, live(serving_state, project))
    }


@pytest.mark.parametrize("multi_user", [False, True], ids=["single-user", "team"])
def test_a_key_press_is_two_database_sessions_and_stores_the_suggestion_shown(
    serving_state, demo, multi_user
):
    name = str(demo)
    run, request = serving_state, None
    if multi_user:
        run = ServingState.open(
            dataclasses.replace(serving_state.settings, multi_user=True), database=serving_state.db
        )
        auth.ensure_admin(run.db, "admin-password")
        auth.add_user(run.db, "dana", "designer", "designer-password")
        add_member(run.db, demo, "dana")
        request = Request("dana")
    enter = enforce(run, guarded(LABEL, outputs=11)(bind(queue_actions.enter, run.live)))
    with auth.acting_as(auth.actor(run.db, run.settings.multi_user, request and request.username)):
        out = queue_tab.start(run.live, live(run, name), "useful", None)
    state = out.state
    opened = _counting(run)
    per_key, shown = [], []
    for _ in range(CHUNK + 2):  # past the end of the first chunk
        item = state.item
        # what Enter takes: the first suggestion, or out of scope on a card flagged so
        shown.append((item.id, OUT_OF_SCOPE if item.enter_is_out_of_scope else item.first_choice))
        opened.clear()
        out = enter(name, state, request=request)
        per_key.append(len(opened))
        assert "Nothing was changed" not in out.message
        state = out.state
        assert state.item.id not in [i for i, _ in shown]  # always a new card

    assert per_key.count(2) >= CHUNK - 1, per_key
    assert max(per_key) <= 10, per_key
    stored = _labels(serving_state, name)
    assert [stored[i] for i, _ in shown] == [want for _, want in shown]


def test_a_refused_key_press_opens_one_session_and_changes_nothing(serving_state, demo):
    team = ServingState.open(
        dataclasses.replace(serving_state.settings, multi_user=True), database=serving_state.db
    )
    auth.ensure_admin(team.db, "admin-password")
    auth.add_user(team.db, "vic", "viewer", "viewer-password")
    add_member(team.db, demo, "vic")
    enter = enforce(team, guarded(LABEL, outputs=11)(bind(queue_actions.enter, team.live)))
    state = queue_tab.start(serving_state.live, demo, "file", None).state
    before = _labels(serving_state, demo)
    opened = _counting(team)
    out = enter(str(demo), state, request=Request("vic"))
    assert "needs the designer role" in str(out[0]) and len(opened) == 1
    assert _labels(serving_state, demo) == before
