"""The test set does not bend towards the model: a fix of a `test` row (from the Evaluation
view or the Conflicts view) needs a second, explicit confirmation, a relabel names the intent the
designer picked (never a pre-filled prediction), and the likely-mislabelled list says which of
its rows are test rows. A `train` row is fixed as before."""

from __future__ import annotations

import pytest

from app.services.design import conflicts as conflicts_svc
from app.services.labelling import data as data_svc
from app.services.models import evaluation as eval_svc

FLIPPED = "how do i reset my password"  # a train row, flipped below


def _labels(serving_state, demo):
    return {r["id"]: (r["intents"], r["split"]) for r in data_svc.table(serving_state.db, demo)}


def test_an_unconfirmed_fix_of_a_test_row_is_refused_and_changes_nothing(serving_state, demo):
    _, preds = eval_svc.test_predictions(serving_state.factories, demo)
    row = preds[0]
    before = _labels(serving_state, demo)
    for action in eval_svc.TEST_FIXES:
        with pytest.raises(ValueError, match=rf"#{row.id} is a test utterance.*Nothing was"):
            eval_svc.fix_test_row(serving_state.db, demo, row.id, action, row.predicted)
    with pytest.raises(ValueError, match="Pick the intent to relabel it as"):
        eval_svc.fix_test_row(serving_state.db, demo, row.id, "relabel", "", confirmed=True)
    assert _labels(serving_state, demo) == before
    said = eval_svc.fix_test_row(
        serving_state.db, demo, row.id, "relabel", "track_order", confirmed=True
    )
    assert said == f"#{row.id} relabelled as track_order"
    assert _labels(serving_state, demo)[row.id] == ("track_order", "test")


def test_the_likely_mislabelled_list_marks_test_rows_and_their_fixes_need_a_confirmation(
    serving_state, demo
):
    train_row = next(r for r in data_svc.table(serving_state.db, demo) if r["text"] == FLIPPED)
    data_svc.label_utterance(serving_state.db, demo, train_row["id"], ["discount_code"])
    test_row = next(
        r for r in data_svc.table(serving_state.db, demo) if r["split"] == "test" and r["intents"]
    )
    wrong = "discount_code" if test_row["intents"] != "discount_code" else "track_order"
    data_svc.label_utterance(serving_state.db, demo, test_row["id"], [wrong])  # a flipped test row

    found = {c.ids: c for c in conflicts_svc.find(serving_state.live, demo, "mislabel")}
    on_test, on_train = found[(test_row["id"],)], found[(train_row["id"],)]
    assert on_test.test_ids == (test_row["id"],) and on_train.test_ids == ()

    before = _labels(serving_state, demo)
    with pytest.raises(ValueError, match=rf"#{test_row['id']} is a test utterance"):
        conflicts_svc.apply(serving_state.db, demo, on_test.fixes[0])
    assert _labels(serving_state, demo) == before
    assert conflicts_svc.apply(
        serving_state.db, demo, on_test.fixes[0], confirm_test=True
    ).startswith(f"#{test_row['id']} → ")
    assert conflicts_svc.apply(serving_state.db, demo, on_train.fixes[0]).startswith(
        f"#{train_row['id']} → "
    )
