"""Retrains that start when they can pay (issue 71 item 2): what the labels changed counts net and
by what it can change in the model (a bulk label and its undo start nothing; a new intent, a move
to another intent and a label the served model got wrong weigh more; a large pool asks for more),
and "quiet" means nobody works in the Label tab: a card on screen, or asked for and not yet shown,
holds the spell. Real SQLite, the real Huey queue, the Label tab's own card handler."""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest

from app.perimeter.in_use import Working
from app.services.labelling import bulk, history
from app.services.labelling import data as data_svc
from app.services.projects import settings as settings_svc
from app.services.projects.io import destination, import_utterances
from app.services.queue import queue as queue_svc
from app.services.training import auto_retrain
from app.services.training import retrain_jobs as svc
from app.serving.compute import budget_for
from app.ui import queue_tab
from app.ui.common import bind
from app.ui.queue_activity import holding
from storage.utterances import NewUtterance, find_by_text
from tests.handles import live
from tests.samples import make_tiny

pytestmark = pytest.mark.slow

QUIET = 1.0  # the quiet spell, shortened for the test


@pytest.fixture
def watcher(serving_state):
    budget = dataclasses.replace(budget_for("cpu"), auto_quiet_s=QUIET)
    return auto_retrain.Watcher(serving_state.training, budget)


def quiet() -> None:
    time.sleep(QUIET + 0.1)


def read(serving_state, name: str) -> None:
    """A retrain reads the project's labels now (its job marks them; cancelled, it trains
    nothing): what they change from here counts towards the next one."""
    view, _ = svc.request_retrain(serving_state.training, live(serving_state, name), enqueue=False)
    svc.cancel(serving_state.db, view.id)


def weight(serving_state, name: str) -> float:
    return auto_retrain.state(
        serving_state.db, live(serving_state, name).handle(), budget_for("cpu")
    ).weight


def unlabelled(serving_state, name: str, n: int, stem: str = "where is my parcel") -> list[int]:
    p = live(serving_state, name)
    return [
        data_svc.add_utterance(serving_state.db, p, f"{stem} {i}", split="unlabelled")["id"]
        for i in range(n)
    ]


def test_a_bulk_label_and_its_undo_start_no_retrain_the_same_bulk_label_kept_does(
    serving_state, watcher
) -> None:
    """The walk of issue 71: a bulk label of 125 rows and its Undo (no label changed in the end)
    started a 10.7-minute retrain."""
    make_tiny(serving_state)
    rows = unlabelled(serving_state, "tiny", 125)
    read(serving_state, "tiny")
    p = live(serving_state, "tiny")
    done = bulk.label_many(serving_state.db, p, rows, "card_lost")
    assert len(done.change) == 125
    history.undo_batch(serving_state.db, p, done.batch)
    quiet()
    assert watcher.start_due() == []
    assert weight(serving_state, "tiny") == 0
    bulk.label_many(serving_state.db, p, rows, "card_lost")  # this time it stays
    assert weight(serving_state, "tiny") == 125
    quiet()
    [started] = watcher.start_due()
    assert started.trigger == "auto"


def test_changes_weigh_what_they_can_change_in_the_model_net(serving_state) -> None:
    """The rule (app.services.training.auto_retrain): a new example 1, 2 where the model that
    served had decided otherwise on its card; a move to another intent 2; a test row nothing; a
    new intent 10 besides its examples; an edit written back nothing; in a pool over 1,000
    examples, each its share of the pool."""
    make_tiny(serving_state)
    u1, u2 = unlabelled(serving_state, "tiny", 2, stem="I cannot see my card")
    read(serving_state, "tiny")
    p = live(serving_state, "tiny")
    assert weight(serving_state, "tiny") == 0
    new = data_svc.add_utterance(serving_state.db, p, "my card is gone for good", "card_lost")["id"]
    assert weight(serving_state, "tiny") == 1
    data_svc.label_utterance(serving_state.db, p, new, ["refund"])  # relabelled, then back: still 1
    data_svc.label_utterance(serving_state.db, p, new, ["card_lost"])
    assert weight(serving_state, "tiny") == 1
    # the Label tab's answers keep the card's decision: a label the model got wrong weighs 2
    queue_svc.answer(serving_state.live, p.handle(), u1, "take", ["card_lost"], served=["balance"])
    assert weight(serving_state, "tiny") == 3
    queue_svc.answer(
        serving_state.live, p.handle(), u2, "take", ["card_lost"], served=["card_lost"]
    )
    assert weight(serving_state, "tiny") == 4
    with (
        serving_state.db.session() as s
    ):  # an example the last retrain learnt as balance, now a refund
        moved = find_by_text(s, p.id, "balance please")
    assert moved is not None
    data_svc.label_utterance(serving_state.db, p, moved, ["refund"])
    assert weight(serving_state, "tiny") == 6
    data_svc.add_utterance(serving_state.db, p, "card gone, what now", "card_lost", "test")
    assert weight(serving_state, "tiny") == 6  # the test split: the model learns nothing from it
    for text in ("thanks a lot", "thank you so much"):
        data_svc.add_utterance(serving_state.db, p, text, "thanks", create=True)
    assert weight(serving_state, "tiny") == 6 + 2 + 10
    assert (
        "a new intent 10"
        in auto_retrain.state(serving_state.db, p.handle(), budget_for("cpu")).words
    )

    # a pool of 1,200 examples: 20 new ones are 1.7 % of it, and weigh 20 * 1000 / 1200
    rows = [
        NewUtterance(f"{stem} number {i}", (intent,))
        for i in range(600)
        for stem, intent in (("order", "track_order"), ("refund", "refund"))
    ]
    import_utterances(serving_state.db, destination(serving_state.db, "big"), rows)
    read(serving_state, "big")
    big = live(serving_state, "big")
    for i in range(20):
        data_svc.add_utterance(serving_state.db, big, f"where is order {i} now", "track_order")
    assert weight(serving_state, "big") == round(20 * 1000 / 1200, 2)


def test_a_card_on_screen_and_unanswered_holds_the_quiet_spell(serving_state, watcher) -> None:
    """Issue 71: an automatic retrain started between two slow cards while the designer was
    still typing. The spell counts from the Label tab's last card shown (or key); a card asked
    for and not yet shown holds it; once it has passed, the retrain starts."""
    make_tiny(serving_state)  # its imported labels call for a retrain once the project is quiet
    unlabelled(serving_state, "tiny", 3, stem="is my card on its way")
    # the Label tab's own card handler, held as the tab holds it; writes at the pace of the
    # shortened spell (the app's: 2 s under a 3 s spell)
    work = Working(serving_state.db, every=QUIET / 5)
    start = holding(work)(bind(queue_tab.start, serving_state.live))
    p = live(serving_state, "tiny").handle()
    quiet()  # no label for a while...
    view = start(p, queue_svc.DEFAULT_ORDER, None)  # ...and the designer opens the Label tab
    assert view.state.item is not None  # a card on screen, unanswered
    assert work.wait_written()
    assert watcher.start_due() == []  # within the spell after the card showed

    # the next card is slow: asked for (an answer), not shown for three spells
    asked = threading.Event()

    def slow_card(p) -> None:
        asked.set()
        time.sleep(3 * QUIET)

    slow = threading.Thread(target=holding(work)(slow_card), args=(p,))
    slow.start()
    asked.wait(5)
    deadline = time.monotonic() + 3 * QUIET
    while slow.is_alive() and time.monotonic() < deadline:
        assert watcher.start_due() == []  # held while the card is on its way
        time.sleep(QUIET / 4)
    slow.join()
    assert work.wait_written()
    assert watcher.start_due() == []  # it shows now: a new spell from here
    quiet()
    [started] = watcher.start_due()  # nobody works any more: the retrain starts
    assert started.trigger == "auto"


def test_keys_without_an_answer_hold_the_spell_and_a_viewer_holds_nothing(
    serving_state, watcher
) -> None:
    """Typing an intent's name sends no answer: the page's keys say someone works (the hidden
    button queue_activity.seen). A viewer's page cannot hold a project's retrains off."""
    from app.access import auth
    from app.services.projects.members import add_member
    from app.ui.queue_activity import seen

    make_tiny(serving_state)
    settings_svc.change(
        serving_state.live, live(serving_state, "tiny"), {"auto_retrain_after": "5"}
    )
    work = Working(serving_state.db, every=QUIET / 5)
    viewer = auth.add_user(serving_state.db, "vic", "viewer", "vic-password")
    add_member(serving_state.db, live(serving_state, "tiny").handle(), "vic", "viewer")
    quiet()
    end = time.monotonic() + 3 * QUIET
    while time.monotonic() < end:  # a designer typing a name, key after key
        seen(work, live(serving_state, "tiny").handle())
        work.wait_written()
        assert watcher.start_due() == []
        time.sleep(QUIET / 4)
    quiet()
    seen(work, live(serving_state, "tiny", viewer).handle())  # a viewer's keys: nothing held
    work.wait_written()
    [started] = watcher.start_due()
    assert started.trigger == "auto"
