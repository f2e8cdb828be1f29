"""Out of scope in the app: one decision in Try, the queue, the API, the CLI and a bundle; the
project's trade-off setting; the reserved out_of_scope label."""

from __future__ import annotations

import pytest

from app.cli import main
from app.services.labelling import data as data_svc
from app.services.models.predict import predict_one, predict_requests
from app.services.projects import bundles, projects
from app.services.queue import queue as queue_svc
from core.bundle import load
from core.evaluation.oos import OUT_OF_SCOPE

WEATHER = "what's the weather like in Paris tomorrow"


def test_a_question_about_nothing_in_the_project_is_out_of_scope_everywhere(
    serving_state, demo, tmp_path
):
    out = predict_one(serving_state.live, demo, WEATHER)
    assert out["oos"] and out["labels"] == [] and out["top"] is not None
    assert out["score"] < out["threshold"]
    assert out["explanation"]["out_of_scope"]
    assert "out of scope" in out["explanation"]["sentence"]
    # an in-scope question still gets its intent, with the threshold it reached
    parcel = predict_one(serving_state.live, demo, "where is my parcel? it has not arrived")
    assert parcel["labels"] == ["track_order"] and parcel["score"] >= parcel["threshold"]
    # the API's micro-batch decides the same
    api = predict_requests(serving_state.live, [(demo, WEATHER, 1)])[0]
    assert api["oos"] and api["threshold"] == pytest.approx(out["threshold"])
    # the queue flags it and offers the intents; out of scope has its own key (0), Enter and
    # Shift+Enter still take suggestion 1 (issue 25, item 3; issue 47 item 1's keys)
    row = data_svc.add_utterance(serving_state.db, demo, WEATHER, [], "unlabelled")
    item = queue_svc.item(serving_state.live, demo, row["id"])
    assert item is not None and item.out_of_scope and item.first_choice == out["top"]
    assert item.suggestions[0].intent == out["top"]
    # a bundle carries the thresholds and decides the same without the app
    path = tmp_path / "demo.zip"
    bundles.export_bundle(serving_state.live, demo, path)
    with load(path) as bundle:
        [b] = bundle.predict([WEATHER])
    assert b["oos"] and b["threshold"] == pytest.approx(out["threshold"], abs=1e-4)


def test_one_out_of_scope_example_is_no_class_and_needs_no_minimum(serving_state, demo):
    data_svc.add_utterance(
        serving_state.db, demo, "tell me a joke about cats", [OUT_OF_SCOPE], "train"
    )
    out = predict_one(serving_state.live, demo, "tell me a joke about cats")
    assert all(s["intent"] != OUT_OF_SCOPE for s in out["intents"])
    assert out["oos"]  # the very example the designer marked is rejected
    status = projects.out_of_scope(serving_state.live, demo)
    assert "1 examples labelled out_of_scope" in status["message"]
    from app.services.training.retrain_jobs import check_trainable
    from storage.utterances import list_utterances

    with serving_state.db.session() as s:
        from storage.projects import get_project

        rows = list_utterances(s, get_project(s, str(demo)).id)
    check_trainable([r.labels for r in rows if r.split == "train" and r.labels])


def test_the_trade_off_is_a_project_setting_and_a_bad_value_changes_nothing(serving_state, demo):
    assert projects.out_of_scope(serving_state.live, demo)["target_recall"] == 0.95
    projects.set_settings(serving_state.db, demo, {"oos_target_recall": "99%"})
    keep_most = projects.out_of_scope(serving_state.live, demo)["thresholds"]
    projects.set_settings(serving_state.db, demo, {"oos_target_recall": 0.6})
    keep_fewer = projects.out_of_scope(serving_state.live, demo)["thresholds"]
    assert keep_fewer["default"] > keep_most["default"]  # turning more questions away
    with pytest.raises(ValueError, match=r"between 0\.5 and 1"):
        projects.set_settings(serving_state.db, demo, {"oos_target_recall": 1.5})
    with pytest.raises(ValueError, match=r"a number such as 0\.95"):
        projects.set_settings(serving_state.db, demo, {"oos_target_recall": "most"})
    assert projects.out_of_scope(serving_state.live, demo)["target_recall"] == 0.6
    projects.set_settings(serving_state.db, demo, {"oos_target_recall": "off"})
    off = projects.out_of_scope(serving_state.live, demo)
    assert off["target_recall"] is None and off["thresholds"] == {}
    out = predict_one(serving_state.live, demo, WEATHER)
    assert not out["oos"] and out["labels"] == [out["top"]]


def test_the_cli_prints_the_decision_and_refuses_a_bad_target(tmp_path, capsys):
    d = ["--data-dir", str(tmp_path / "data")]
    src = tmp_path / "in.csv"
    rows = [f"where is my parcel {i},track" for i in range(6)]
    rows += [f"cancel my order number {i},cancel" for i in range(6)]
    src.write_text("text,label\n" + "\n".join(rows) + "\n")
    assert main([*d, "import", str(src), "--project", "p"]) == 0
    capsys.readouterr()
    assert main([*d, "settings", "--project", "p", "--set", "oos_target_recall=2"]) == 2
    assert "between 0.5 and 1" in capsys.readouterr().err
    assert main([*d, "predict", "--project", "p", "what's the weather in Paris"]) == 0
    assert "no intent: out of scope" in capsys.readouterr().out


def test_the_header_counts_intents_not_the_out_of_scope_answer(serving_state, demo):
    """out_of_scope is the answer that no intent applies, stored as a label: the project's
    header counts the intents a designer made (issue 47, item 10: "78 intents" for 77)."""
    made = set(data_svc.intent_names(serving_state.db, demo)) - {OUT_OF_SCOPE}
    row = data_svc.add_utterance(serving_state.db, demo, WEATHER, [], "unlabelled")
    queue_svc.answer(serving_state.live, demo, row["id"], "oos")
    assert OUT_OF_SCOPE in data_svc.intent_names(
        serving_state.db, demo
    )  # a label like any other now
    summary = projects.summary(serving_state.db, demo)
    assert summary.n_intents == len(made)
    assert f" · {len(made)} intents · " in summary.headline()
