from __future__ import annotations

import pytest

from app.services.labelling import data as data_svc
from app.services.labelling import history
from app.services.models.predict import predict, predict_one
from tests.handles import live


def test_demo_project_is_created_once_with_enough_data(serving_state, demo):
    from app.services.projects.projects import ensure_demo_project, summary

    s = summary(serving_state.db, demo)
    assert s.n_intents >= 8 and s.n_train >= 8 * 12 and s.n_unlabelled >= 25
    assert ensure_demo_project(serving_state.db) is None  # not twice


def test_prediction_is_explained_by_labelled_neighbours(serving_state, demo):
    out = predict_one(serving_state.live, demo, "where is my parcel? it has not arrived")
    assert out["top"] == "track_order"
    assert out["neighbours"] and all(n["labels"] for n in out["neighbours"])
    top = out["intents"][0]
    assert top["best"]["similarity"] == pytest.approx(top["nearest"])
    assert top["score"] == pytest.approx((top["nearest"] + top["prototype"]) / 2)
    assert out["labels"] == ["track_order"]
    assert out["margin"] == pytest.approx(
        out["intents"][0]["score"] - out["intents"][1]["score"], abs=1e-3
    )


def test_a_new_label_changes_the_next_prediction_without_training(serving_state, demo):
    query = "can I buy a gift voucher for my sister"
    before = predict_one(serving_state.live, demo, query)["top"]
    assert before != "gift_cards"
    data_svc.add_utterance(
        serving_state.db, demo, "do you sell gift vouchers", ["gift_cards"], create=True
    )
    assert predict_one(serving_state.live, demo, query)["top"] == "gift_cards"
    history.undo(serving_state.db, demo)  # removing the example removes its influence just as fast
    assert predict_one(serving_state.live, demo, query)["top"] == before


def test_relabelling_an_unlabelled_utterance_moves_it_into_the_pool(serving_state, demo):
    row = max(
        data_svc.table(serving_state.db, demo, split="unlabelled"), key=lambda r: len(r["text"])
    )
    data_svc.label_utterance(serving_state.db, demo, row["id"], ["talk_to_human"])
    updated = next(
        r
        for r in data_svc.table(serving_state.db, demo, search=row["text"])
        if r["id"] == row["id"]
    )
    assert updated["split"] == "train" and updated["intents"] == "talk_to_human"
    out = predict_one(serving_state.live, demo, row["text"])
    assert out["neighbours"][0]["text"] == row["text"] and out["top"] == "talk_to_human"


def test_changes_from_another_process_are_seen(serving_state, demo, tmp_path):
    """A second context on the same database stands in for another process (the CLI)."""
    from app.serving.state import ServingState

    other = ServingState.open(serving_state.settings)
    query = "is the blue raincoat back in stock in size L"
    predict_one(serving_state.live, demo, query)
    data_svc.add_utterance(
        other.db,
        demo,
        "is the blue raincoat back in stock in size L",
        ["restock_alert"],
        create=True,
    )
    assert predict_one(serving_state.live, demo, query)["top"] == "restock_alert"
    other.close()


def test_bad_predict_input_is_a_clear_error(serving_state, demo):
    with pytest.raises(ValueError, match="Type an utterance"):
        predict(serving_state.live, demo, ["  "])
    with pytest.raises(ValueError, match="longer than 2000"):
        predict(serving_state.live, demo, ["x" * 2001])
    from app.services.projects.projects import new_project

    new_project(serving_state.db, "empty")
    with pytest.raises(ValueError, match="no labelled training utterances"):
        predict(serving_state.live, live(serving_state, "empty"), ["hello"])


def test_a_prediction_comes_with_both_sides_of_its_decision(serving_state, demo):
    out = predict_one(serving_state.live, demo, "where is my parcel? it has not arrived")
    ex = out["explanation"]
    top, runner_up = out["intents"][0], out["intents"][1]
    assert ex["predicted"] == out["top"] == top["intent"]
    assert ex["predicted_neighbour"]["text"] == top["best"]["text"]
    assert ex["runner_up"] == runner_up["intent"]
    assert ex["runner_up_neighbour"]["text"] == runner_up["best"]["text"]
    assert ex["margin"] == pytest.approx(out["margin"], abs=1e-6)
    assert f"*{top['intent']}*" in ex["sentence"] and f"*{runner_up['intent']}*" in ex["sentence"]


def test_micro_batched_requests_answer_like_single_ones_and_isolate_errors(serving_state, demo):
    from app.services.models.predict import predict_requests

    requests = [
        (demo, "where is my parcel", 1),
        (demo, "   ", 1),
        (demo, "I forgot my password", 1),
        (demo, "", 1),
    ]
    out = predict_requests(serving_state.live, requests)
    assert out[0]["top"] == predict_one(serving_state.live, demo, "where is my parcel")["top"]
    assert out[2]["top"] == predict_one(serving_state.live, demo, "I forgot my password")["top"]
    assert "Type an utterance" in out[1]["error"]  # each bad one alone: the others answered
    assert "Type an utterance" in out[3]["error"]


def test_an_unchanged_pool_costs_one_statement_and_a_change_from_elsewhere_is_still_seen(
    serving_state, demo
):
    """The hot path of every prediction reads one stamp; an intent's new description written by
    another process (a second context on the same database) reaches the next explanation."""
    from sqlalchemy import event

    from app.serving.state import ServingState
    from storage.projects import get_project

    query = "where is my parcel? it has not arrived"
    predict_one(serving_state.live, demo, query)
    with serving_state.db.session() as s:
        project_id = get_project(s, str(demo)).id
    statements: list[str] = []

    def count(conn, cursor, statement, *args):
        if not statement.startswith(("BEGIN", "COMMIT", "ROLLBACK")):
            statements.append(statement)

    event.listen(serving_state.db.engine, "before_cursor_execute", count)
    try:
        pool = serving_state.live.pool(project_id)
        assert len(statements) == 1, statements
        other = ServingState.open(serving_state.settings)
        data_svc.describe_intent(other.db, demo, "track_order", "Where an order is now")
        other.close()
        out = predict_one(serving_state.live, demo, query)
    finally:
        event.remove(serving_state.db.engine, "before_cursor_execute", count)
    assert out["top"] == "track_order"
    assert out["explanation"]["predicted_description"] == "Where an order is now"
    assert (
        serving_state.live.pool(project_id) is pool
        and pool.intents["track_order"] == "Where an order is now"
    )
