"""Bulk labelling is safe: a preview says what changes and what is protected, already labelled
utterances (test ones included) are left alone unless the person chooses otherwise, and the whole
batch is one Undo."""

from __future__ import annotations

import pytest

from app.services.labelling import bulk as bulk_svc
from app.services.labelling import data as data_svc
from app.services.labelling import history


def _mixed_selection(serving_state, demo) -> tuple[list[int], dict[int, tuple[str, str]]]:
    """A lasso that catches unlabelled points and labelled ones (train and test)."""
    for text in ("my parcel is lost somewhere", "no idea where the box went", "parcel gone"):
        data_svc.add_utterance(serving_state.db, demo, text, [], "unlabelled")
    rows = data_svc.table(serving_state.db, demo)
    unlabelled = [r["id"] for r in rows if r["split"] == "unlabelled"][:3]
    train = [r["id"] for r in rows if r["split"] == "train" and r["intents"]][:4]
    test = [r["id"] for r in rows if r["split"] == "test" and r["intents"]][:2]
    before = {r["id"]: (r["intents"], r["split"]) for r in rows}
    return unlabelled + train + test, before


def test_the_preview_counts_what_changes_and_what_is_protected(serving_state, demo):
    ids, before = _mixed_selection(serving_state, demo)
    plan = bulk_svc.plan_label(serving_state.db, demo, ids, ["lost_parcel"], create=True)
    assert plan.selected == len(ids) and len(plan.fresh) == 3 and len(plan.labelled) == 6
    assert plan.labelled_test == 2
    assert plan.change == plan.fresh
    assert "will be left as they are" in plan.summary()
    assert {
        r["id"]: (r["intents"], r["split"]) for r in data_svc.table(serving_state.db, demo)
    } == before


def test_labelled_rows_are_left_by_default_and_one_undo_reverts_the_batch(serving_state, demo):
    ids, before = _mixed_selection(serving_state, demo)
    done = bulk_svc.label_many(serving_state.db, demo, ids, ["lost_parcel"], create=True)
    after = {r["id"]: (r["intents"], r["split"]) for r in data_svc.table(serving_state.db, demo)}
    assert all(after[i] == ("lost_parcel", "train") for i in done.fresh)  # joined the pool
    assert all(after[i] == before[i] for i in done.labelled)  # protected, test rows included
    assert "label of 3 utterance(s)" in history.undo(
        serving_state.db, demo
    )  # one click, the whole batch
    assert {
        r["id"]: (r["intents"], r["split"]) for r in data_svc.table(serving_state.db, demo)
    } == before


def test_relabelling_labelled_rows_is_an_explicit_choice(serving_state, demo):
    ids, before = _mixed_selection(serving_state, demo)
    done = bulk_svc.label_many(
        serving_state.db, demo, ids, ["lost_parcel"], relabel_labelled=True, create=True
    )
    assert len(done.change) == len(ids)
    after = {r["id"]: (r["intents"], r["split"]) for r in data_svc.table(serving_state.db, demo)}
    assert all(after[i][0] == "lost_parcel" for i in ids)
    assert all(after[i][1] == "test" for i in ids if before[i][1] == "test")  # split kept
    history.undo(serving_state.db, demo)
    assert {
        r["id"]: (r["intents"], r["split"]) for r in data_svc.table(serving_state.db, demo)
    } == before


def test_a_bulk_label_refuses_when_the_rows_to_change_are_not_the_previewed_ones(
    serving_state, demo
):
    ids, _ = _mixed_selection(serving_state, demo)
    plan = bulk_svc.plan_label(serving_state.db, demo, ids, ["lost_parcel"], create=True)
    data_svc.label_utterance(
        serving_state.db, demo, plan.fresh[0], ["track_order"]
    )  # labelled meanwhile
    meanwhile = {
        r["id"]: (r["intents"], r["split"]) for r in data_svc.table(serving_state.db, demo)
    }
    with pytest.raises(ValueError, match=r"preview said 3 row\(s\) would change; now 2"):
        bulk_svc.label_many(
            serving_state.db, demo, ids, ["lost_parcel"], expected=plan.change, create=True
        )
    assert {
        r["id"]: (r["intents"], r["split"]) for r in data_svc.table(serving_state.db, demo)
    } == meanwhile
    done = bulk_svc.label_many(
        serving_state.db, demo, ids, ["lost_parcel"], expected=plan.change[1:], create=True
    )
    assert done.change == plan.change[1:]


def test_a_target_written_another_way_names_the_intent_and_its_rows_are_done(serving_state, demo):
    """Issue 43 hole 4: "Track Order" is the intent track_order (one name key): a selection of
    its own rows changes nothing, and the rows given it get the stored name."""
    rows = data_svc.table(serving_state.db, demo)
    own = [r["id"] for r in rows if r["intents"] == "track_order"][:3]
    fresh = [r["id"] for r in rows if not r["intents"]][:2]
    plan = bulk_svc.plan_label(serving_state.db, demo, own + fresh, ["Track Order"])
    assert plan.target == ("track_order",) and plan.change == tuple(fresh) and not plan.labelled
    done = bulk_svc.label_many(
        serving_state.db, demo, own + fresh, ["Track Order"], token=plan.token
    )
    after = {r["id"]: r["intents"] for r in data_svc.table(serving_state.db, demo)}
    assert all(after[i] == "track_order" for i in own + fresh) and done.change == tuple(fresh)
