"""The Evaluation section with the values its widgets hold: ranked pairs and per-intent rows lead
to the test utterances behind them, and each can be fixed in place."""

from __future__ import annotations

from app.services import data as data_svc
from app.ui.train import evaluation


def test_pairs_lead_to_their_utterances_and_a_relabel_fixes_one_in_place(ctx, demo):
    head, intents, pairs, _, heat, confusion = evaluation.evaluate(ctx, demo, 3)
    assert "accuracy" in head and list(pairs.columns) == evaluation.PAIR_COLUMNS
    assert len(heat.data[0].x) == 3  # only the three most confused intents
    assert list(intents["F1"]) == sorted(intents["F1"])  # worst first
    top = pairs.iloc[0]
    assert 0 < top["share"] <= 1 and top["count"] >= 1
    rows = evaluation.show_cell(ctx, demo, f"{top['gold']} → {top['predicted as']}")
    assert len(rows) == top["count"]
    assert set(rows["gold"]) == {top["gold"]} and set(rows["predicted"]) == {top["predicted as"]}
    misses = evaluation.show_cell(ctx, demo, f"{top['gold']} →")  # an intent row: all its misses
    assert len(misses) >= len(rows)

    uid = int(rows.iloc[0]["id"])
    msg = evaluation.act(ctx, "relabel", demo, uid, top["predicted as"])
    assert "relabelled" in msg
    row = next(r for r in data_svc.table(ctx, demo) if r["id"] == uid)
    assert (row["intents"], row["split"]) == (top["predicted as"], "test")  # still held out
    assert "moved to train" in evaluation.act(ctx, "move", demo, uid, None)
    assert next(r for r in data_svc.table(ctx, demo) if r["id"] == uid)["split"] == "train"
    assert "Click an utterance" in evaluation.act(ctx, "delete", demo, None, None)
    assert "deleted" in evaluation.act(ctx, "delete", demo, uid, None)
    assert all(r["id"] != uid for r in data_svc.table(ctx, demo))
    assert len(evaluation.heatmap(confusion, 5).data[0].x) == 5
