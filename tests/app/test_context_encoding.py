"""Multi-turn context (ConveRT's idea): a project may encode each utterance after the turn before it.
The pool, the questions, the evaluation and the explanation then all see 'context [SEP] text';
off by default, and then a question's context is ignored and the answer says so."""

from __future__ import annotations

import pytest

from app.formats import Row
from app.services.models.predict import predict, predict_one, predict_requests
from app.services.projects import projects
from app.services.projects.export import export_rows
from app.services.projects.io import destination, import_utterances
from tests.handles import live

CANCEL = "Do you want to cancel your card?"
TOP_UP = "Do you want to top up?"
ROWS = [
    *(
        Row(t, ("cancel_card",))
        for t in ("cancel my card", "I want to cancel my debit card", "please close my card")
    ),
    *(
        Row(t, ("top_up",))
        for t in ("top up my account", "I want to add money to my balance", "how do I top up")
    ),
    Row("sure, go ahead", ("cancel_card",), "train", "Shall I close your card for you?"),
    Row("that one", ("top_up",), "test", "Which card should I top up?"),
]


@pytest.fixture
def bank(serving_state):
    import_utterances(serving_state.db, destination(serving_state.db, "bank"), list(ROWS))
    return live(serving_state, "bank")


def _pool(serving_state, project):
    from storage.projects import get_project

    with serving_state.db.session() as s:
        pid = get_project(s, str(project)).id
    return serving_state.live.pool(pid)


def test_context_decides_an_answer_that_alone_means_nothing(serving_state, bank):
    projects.set_settings(serving_state.db, live(serving_state, bank), {"encode_context": "on"})
    cancel = predict_one(
        serving_state.live, live(serving_state, bank), "yes please", context=CANCEL
    )
    top_up = predict_one(
        serving_state.live, live(serving_state, bank), "yes please", context=TOP_UP
    )
    assert (cancel["top"], top_up["top"]) == ("cancel_card", "top_up")
    assert cancel["text"] == "yes please" and cancel["context"] == CANCEL
    assert cancel["context_used"] is True
    # the explanation is of what was encoded: the question after its context
    assert cancel["explanation"]["text"] == f"{CANCEL} [SEP] yes please"


def test_the_pool_encodes_each_example_after_its_context_and_shows_it(serving_state, bank, encoder):
    projects.set_settings(serving_state.db, live(serving_state, bank), {"encode_context": "on"})
    pool = _pool(serving_state, live(serving_state, bank))
    shown = "Shall I close your card for you? [SEP] sure, go ahead"
    assert shown in [t for t, _ in pool.items.values()]
    uid = next(i for i, (t, _) in pool.items.items() if t == shown)
    hit = pool.index.search(encoder.encode([shown]), 1)[0][0]  # its vector is the composed text's
    assert (hit.id, hit.similarity) == (uid, pytest.approx(1.0, abs=1e-4))
    out = predict_one(
        serving_state.live,
        live(serving_state, bank),
        "go ahead then",
        context="Shall I close your card?",
    )
    assert out["neighbours"][0]["text"] == shown  # the evidence names the example's context
    projects.set_settings(
        serving_state.db, live(serving_state, bank), {"encode_context": "off"}
    )  # off: the same pool, texts alone
    assert "sure, go ahead" in [
        t for t, _ in _pool(serving_state, live(serving_state, bank)).items.values()
    ]


def test_off_by_default_a_context_is_ignored_and_the_answer_says_so(serving_state, bank):
    assert (
        projects.context_encoding(serving_state.db, live(serving_state, bank))["encode_context"]
        is False
    )
    alone = predict_one(serving_state.live, live(serving_state, bank), "yes please")
    sent = predict_one(serving_state.live, live(serving_state, bank), "yes please", context=CANCEL)
    assert sent["context_used"] is False and sent["context"] == CANCEL
    assert (sent["top"], sent["score"]) == (alone["top"], pytest.approx(alone["score"]))
    assert "context" not in alone


def test_the_micro_batch_carries_each_request_s_own_context(serving_state, bank):
    projects.set_settings(serving_state.db, live(serving_state, bank), {"encode_context": True})
    out = predict_requests(
        serving_state.live,
        [(bank, "yes please", 1, CANCEL), (bank, "yes please", 1, TOP_UP), (bank, "hi", 1)],
    )
    assert [r["top"] for r in out[:2]] == ["cancel_card", "top_up"]
    assert "context" not in out[2]


def test_a_retrain_and_an_evaluation_see_what_the_pool_sees(serving_state, bank):
    from app.project_settings import ProjectSettings, as_encoded
    from app.services.models.evaluation import test_predictions
    from storage.datasets import snapshot, snapshot_rows
    from storage.projects import get_project

    projects.set_settings(serving_state.db, live(serving_state, bank), {"encode_context": "on"})
    _, preds = test_predictions(serving_state.factories, live(serving_state, bank), "base")
    assert [p.text for p in preds] == ["Which card should I top up? [SEP] that one"]
    with serving_state.db.session() as s:
        p = get_project(s, str(bank))
        rows = as_encoded(
            snapshot_rows(snapshot(s, p.id)), ProjectSettings.from_dict(p.settings)
        )  # what run_retrain trains on
    assert "Shall I close your card for you? [SEP] sure, go ahead" in {r.text for r in rows}
    assert "cancel my card" in {r.text for r in rows}  # no context: the text alone


def test_exported_rows_keep_their_contexts(serving_state, bank):
    kept = {r.text: r.context for r in export_rows(serving_state.db, live(serving_state, bank))}
    assert kept["sure, go ahead"] == "Shall I close your card for you?"
    assert kept["cancel my card"] == ""


@pytest.mark.parametrize(
    ("contexts", "message"),
    [
        (["x" * 2001], "Context is longer than 2000 characters"),
        (["a\x00b"], "Context contains a NUL character"),
        ([CANCEL, TOP_UP], "1 utterance\\(s\\) but 2 context\\(s\\)"),
    ],
)
def test_a_bad_context_is_a_message(serving_state, bank, contexts, message):
    with pytest.raises(ValueError, match=message):
        predict(serving_state.live, live(serving_state, bank), ["yes please"], contexts=contexts)


def test_the_setting_takes_on_or_off_and_nothing_else(serving_state, bank):
    with pytest.raises(ValueError, match="'on' or 'off', not 'maybe'"):
        projects.set_settings(
            serving_state.db, live(serving_state, bank), {"encode_context": "maybe"}
        )
    assert (
        projects.context_encoding(serving_state.db, live(serving_state, bank))["encode_context"]
        is False
    )
    projects.set_settings(serving_state.db, live(serving_state, bank), {"encode_context": "on"})
    out = projects.context_encoding(serving_state.db, live(serving_state, bank))
    assert out["encode_context"] is True and out["with_context"] == 2


def test_a_bundle_of_a_project_that_encodes_context_is_refused(serving_state, bank, tmp_path):
    from app.services.projects.bundles import export_bundle

    projects.set_settings(serving_state.db, live(serving_state, bank), {"encode_context": "on"})
    with pytest.raises(ValueError, match="a bundle predicts from the utterance alone"):
        export_bundle(
            serving_state.live, live(serving_state, bank), tmp_path / "b.zip", version="base"
        )
    assert not (tmp_path / "b.zip").exists()


def test_the_cli_turns_it_on_and_predicts_with_a_context(serving_state, bank, capsys):
    from app.cli import main

    data = ["--data-dir", str(serving_state.settings.data_dir)]
    assert main([*data, "settings", "--project", str(bank), "--set", "encode_context=on"]) == 0
    out = capsys.readouterr().out
    assert "Changed encode_context off → on." in out and "Context encoding is on" in out
    args = [*data, "predict", "--project", str(bank), "--format", "jsonl", "--context", TOP_UP]
    assert main([*args, "yes please"]) == 0
    assert '"top": "top_up"' in capsys.readouterr().out
    assert main([*data, "predict", "--bundle", "x.zip", "--context", TOP_UP, "yes"]) == 2
    assert "--context needs --project" in capsys.readouterr().err


def test_the_try_tab_predicts_after_the_previous_turn_and_labels_with_it(serving_state, bank):
    from app.ui.common import breakable
    from app.ui.try_tab import label, run

    explanation, *_ = run(serving_state.live, bank, "yes please", 1, TOP_UP)
    assert "The previous turn was ignored" in explanation  # off: says so
    projects.set_settings(serving_state.db, live(serving_state, bank), {"encode_context": "on"})
    explanation, ranked, *_ = run(serving_state.live, bank, "yes please", 1, TOP_UP)
    assert "Encoded after the previous turn" in explanation
    assert ranked.iloc[0]["intent"] == breakable("top_up")  # a name breaks only after a _
    assert "Added" in label(serving_state.db, bank, "go for it", ["top_up"], TOP_UP)
    assert {r.text: r.context for r in export_rows(serving_state.db, live(serving_state, bank))}[
        "go for it"
    ] == TOP_UP
