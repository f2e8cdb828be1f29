"""The Conflicts view's service on the demo project (real SQLite, real encoder): a planted flip
and a planted near-duplicate are found with their fixes, every fix is one undoable batch, a row
changed since the conflicts were found is not overwritten, and the queue can put the likely
mislabels first."""

from __future__ import annotations

import pytest

from app.services.design import conflicts as svc
from app.services.labelling import data as data_svc
from app.services.labelling import history
from app.services.queue import queue as queue_svc
from tests.handles import live

FLIPPED = "how do i reset my password"  # account_password_reset, relabelled discount_code below


def row_by_text(serving_state, project, text):
    return next(
        r
        for r in data_svc.table(serving_state.db, live(serving_state, project), search=text)
        if r["text"] == text
    )


@pytest.fixture
def flipped(serving_state, demo):
    row = row_by_text(serving_state, demo, FLIPPED)
    data_svc.label_utterance(serving_state.db, demo, row["id"], ["discount_code"])
    return row["id"]


def test_a_flipped_label_is_a_likely_mislabel_and_one_click_relabels_it_undoably(
    serving_state, demo, flipped
):
    found = svc.find(serving_state.live, demo, "mislabel")
    mine = next(c for c in found if c.ids == (flipped,))
    assert "labelled discount_code; the other examples say account_password_reset" in mine.title
    assert [f.label for f in mine.fixes] == [
        f"Relabel #{flipped} to account_password_reset",
        f"Delete #{flipped}",
    ]
    assert flipped in svc.likely_mislabelled(serving_state.live, demo)[:3]

    before = len(history.activity(serving_state.db, demo))
    assert (
        svc.apply(serving_state.db, demo, mine.fixes[0]) == f"#{flipped} → account_password_reset."
    )
    assert row_by_text(serving_state, demo, FLIPPED)["intents"] == "account_password_reset"
    assert len(history.activity(serving_state.db, demo)) == before + 1  # one batch
    newest = history.activity(serving_state.db, demo)[0]  # and it says what it did to the intents
    assert (newest["example"], newest["intents"]) == (
        FLIPPED,
        "discount_code → account_password_reset",
    )
    assert all(c.ids != (flipped,) for c in svc.find(serving_state.live, demo, "mislabel"))

    assert "back to discount_code" in svc.undo(serving_state.db, demo)
    assert row_by_text(serving_state, demo, FLIPPED)["intents"] == "discount_code"


def test_a_near_duplicate_with_another_intent_is_found_and_deleting_it_is_undoable(
    serving_state, demo
):
    twin = data_svc.add_utterance(serving_state.db, demo, "where is my order??", ["payment_failed"])
    found = svc.find(serving_state.live, demo, "duplicate")
    mine = next(c for c in found if twin["id"] in c.ids)
    assert mine.ids[1] == twin["id"] and "says what" in mine.title
    assert mine.fixes[0].label.endswith("to track_order") and mine.fixes[1].action == "delete"
    assert svc.apply(serving_state.db, demo, mine.fixes[1]) == f"Deleted #{twin['id']}."
    assert data_svc.table(serving_state.db, demo, search="where is my order??") == []
    svc.undo(serving_state.db, demo)
    assert row_by_text(serving_state, demo, "where is my order??")["intents"] == "payment_failed"


def test_moving_the_confusable_examples_of_an_overlap_is_one_batch_that_one_undo_reverts(
    serving_state, demo
):
    # three track_order examples labelled as cancel_order: the two intents now overlap
    texts = ["wheres my stuff", "order status pls", "has my package left the warehouse yet"]
    ids = [row_by_text(serving_state, demo, t)["id"] for t in texts]
    for uid in ids:
        data_svc.label_utterance(serving_state.db, demo, uid, ["cancel_order"])
    fix = svc.Fix(
        "move",
        "Move",
        tuple(ids),
        ("track_order",),
        tuple(row_by_text(serving_state, demo, t)["version"] for t in texts),
    )
    before = len(history.activity(serving_state.db, demo))
    assert svc.apply(serving_state.db, demo, fix) == "Moved 3 example(s) to track_order."
    activity = history.activity(serving_state.db, demo)
    assert len(activity) == before + 1 and activity[0]["rows"] == 3
    assert "Undid label of 3 utterance(s)" in svc.undo(serving_state.db, demo)
    assert {row_by_text(serving_state, demo, t)["intents"] for t in texts} == {"cancel_order"}


def test_overlapping_intents_offer_a_merge(serving_state, demo, flipped):
    overlaps = svc.find(serving_state.live, demo, "overlap")
    assert overlaps and all(c.fixes[-1].action == "merge" for c in overlaps)
    assert [c.severity for c in overlaps] == sorted((c.severity for c in overlaps), reverse=True)


def test_a_row_changed_since_the_conflicts_were_found_is_not_overwritten(
    serving_state, demo, flipped
):
    mine = next(c for c in svc.find(serving_state.live, demo, "mislabel") if c.ids == (flipped,))
    data_svc.label_utterance(
        serving_state.db, demo, flipped, ["talk_to_human"]
    )  # someone else, meanwhile
    with pytest.raises(data_svc.repo.ConflictError, match="changed by someone else"):
        svc.apply(serving_state.db, demo, mine.fixes[0])
    assert row_by_text(serving_state, demo, FLIPPED)["intents"] == "talk_to_human"


def test_an_unknown_kind_or_fix_is_refused(serving_state, demo):
    with pytest.raises(ValueError, match="Unknown kind of conflict 'dupes'"):
        svc.find(serving_state.live, demo, "dupes")
    with pytest.raises(ValueError, match="Unknown fix 'rename'"):
        svc.apply(serving_state.db, demo, svc.Fix("rename", "x"))


def test_the_queue_can_review_the_likely_mislabelled_first(serving_state, demo, flipped):
    ids = queue_svc.order(serving_state.live, demo, "mislabelled")
    assert ids[0] == flipped
    item = queue_svc.item(serving_state.live, demo, ids[0], review=True)
    assert item is not None and item.current == ("discount_code",)
    assert item.suggestions[0].intent == "account_password_reset"  # the row itself has no vote
    assert item.suggestions[0].example != FLIPPED
    queue_svc.answer(serving_state.live, demo, flipped, "take", ["account_password_reset"])
    assert flipped not in queue_svc.order(serving_state.live, demo, "mislabelled")
