"""The Evaluation section with the values its widgets hold: ranked pairs and per-intent rows lead
to the test utterances behind them, and each can be fixed in place."""

from __future__ import annotations

from app.services.labelling import data as data_svc
from app.ui.common import unbroken
from app.ui.train import evaluation


def test_pairs_lead_to_their_utterances_and_a_relabel_fixes_one_in_place(serving_state, demo):
    head, intents, pairs, _, heat, confusion = evaluation.evaluate(serving_state.factories, demo, 3)
    assert "accuracy" in head and list(pairs.columns) == evaluation.PAIR_COLUMNS
    assert len(heat.data[0].x) == 3  # only the three most confused intents
    assert list(intents["F1"]) == sorted(intents["F1"])  # worst first
    top = pairs.iloc[0]
    assert 0 < top["share"] <= 1 and top["count"] >= 1
    rows = evaluation.show_cell(
        serving_state.factories, demo, f"{top['gold']} → {top['predicted as']}"
    )
    assert len(rows) == top["count"]
    shown = [
        (unbroken(g), unbroken(p)) for g, p in zip(rows["gold"], rows["predicted"], strict=True)
    ]
    assert set(shown) == {(top["gold"], top["predicted as"])}
    misses = evaluation.show_cell(
        serving_state.factories, demo, f"{top['gold']} →"
    )  # an intent row: all its misses
    assert len(misses) >= len(rows)

    uid = int(rows.iloc[0]["id"])
    msg = evaluation.act(serving_state.db, "relabel", demo, uid, top["predicted as"], True)
    assert "relabelled" in msg
    row = next(r for r in data_svc.table(serving_state.db, demo) if r["id"] == uid)
    assert (row["intents"], row["split"]) == (top["predicted as"], "test")  # still held out
    assert "moved to train" in evaluation.act(serving_state.db, "move", demo, uid, None, True)
    assert (
        next(r for r in data_svc.table(serving_state.db, demo) if r["id"] == uid)["split"]
        == "train"
    )
    assert "Click an utterance" in evaluation.act(
        serving_state.db, "delete", demo, None, None, True
    )
    assert "deleted" in evaluation.act(serving_state.db, "delete", demo, uid, None, True)
    assert all(r["id"] != uid for r in data_svc.table(serving_state.db, demo))
    assert len(evaluation.heatmap(confusion, 5).data[0].x) == 5


def test_a_test_row_is_never_relabelled_by_the_prediction_nor_without_a_confirmation(
    serving_state, demo
):
    """The "Relabel as" box starts empty (it was pre-filled with the model's prediction: one
    click turned a correct test label into the prediction and accuracy rose), and a test row
    changes only with "I'm changing a test label" ticked."""
    import pandas as pd

    _, _, pairs, _, _, _ = evaluation.evaluate(serving_state.factories, demo, 3)
    top = pairs.iloc[0]
    rows = evaluation.show_cell(
        serving_state.factories, demo, f"{top['gold']} → {top['predicted as']}"
    )

    class Click:  # what Gradio hands the callback for a click on row 0
        index = (0, 1)

    uid, what, relabel_as, confirm = evaluation.pick_row(pd.DataFrame(rows), Click())
    assert relabel_as["value"] is None and confirm["value"] is False
    assert "test row" in what
    before = data_svc.table(serving_state.db, demo)
    for action, intent in (("relabel", top["predicted as"]), ("move", None), ("delete", None)):
        msg = evaluation.act(serving_state.db, action, demo, uid, intent, False)
        assert "is a test utterance" in msg and "Nothing was changed" in msg
    assert "Pick the intent to relabel it as" in evaluation.act(
        serving_state.db, "relabel", demo, uid, None, True
    )
    assert data_svc.table(serving_state.db, demo) == before
