"""One decision path (issue 26): every number the app shows about a model comes from the Predictor
that serves it. A version's recorded accuracy is the live Predictor's accuracy on its test rows;
the Try tab, the Map's click and the confusion drill-down name the same intent for one utterance;
the reserved out-of-scope label is never an intent in a map, a confusion matrix or a per-intent
table.

The drift these tests catch: evaluation, the Map and the drill-down built pools of their own
without the intents' names and descriptions (anchors) that the live Predictor uses, so an intent
with a description and no example yet, which the server predicts, was never predicted there."""

from __future__ import annotations

import dataclasses

import pytest

from app import worker
from app.services.design import maps as map_svc
from app.services.labelling import data as data_svc
from app.services.models import evaluation as eval_svc
from app.services.models import predict as predict_svc
from app.services.models import versions as version_svc
from app.services.projects import projects as project_svc
from app.services.training import retrain_jobs
from core.evaluation.oos import OUT_OF_SCOPE
from tests.handles import live

pytestmark = pytest.mark.slow

QUICK = {"method": "convfit", "epochs": 1, "batch_size": 8}
# four intents, four training examples each and one test row each
SINGLE = {
    "card_lost": [
        "I lost my card",
        "my card is missing",
        "card was stolen",
        "someone took my card",
    ],
    "balance": ["what is my balance", "how much money do I have", "show my balance", "balance"],
    "greeting": ["hello there", "hi", "good morning", "hey, how are you"],
    "refund": ["I want my money back", "refund my order", "how do I get a refund", "refund"],
}
SINGLE_TEST = {
    "card_lost": "cannot find my bank card",
    "balance": "how much is left in my account",
    "greeting": "hello!",
    "refund": "please give me a refund",
}
# an intent with a description and no training example: the live Predictor names it by its
# anchor (cold start) when anchors are on
GIFT = ("gift_cards", "Buying, sending or spending a gift card or gift voucher")
GIFT_TEST = ["can I buy a gift voucher for my sister", "do you sell gift cards"]

MULTI = [
    ("cancel my booking", "cancel"),
    ("I need to cancel the reservation", "cancel"),
    ("please cancel my stay", "cancel"),
    ("cancel it", "cancel"),
    ("I want a refund", "refund"),
    ("give me my deposit back", "refund"),
    ("refund the payment", "refund"),
    ("money back please", "refund"),
    ("is breakfast included", "breakfast"),
    ("what time is breakfast", "breakfast"),
    ("do you serve breakfast", "breakfast"),
    ("can I park my car", "parking"),
    ("is there parking at the hotel", "parking"),
    ("how much is parking", "parking"),
    ("cancel my booking and refund the deposit", "cancel|refund"),
    ("cancel and give me my money back", "cancel|refund"),
    ("is breakfast included and can I park", "breakfast|parking"),
    ("thanks, that is all", ""),
]
MULTI_TEST = [
    ("please cancel the booking", "cancel"),
    ("I would like my money back", "refund"),
    ("when is breakfast served", "breakfast"),
    ("where do I park", "parking"),
    ("cancel the room and refund me", "cancel|refund"),
    ("thank you so much", ""),
]


@pytest.fixture
def fp32(serving_state):
    """The context with int8 export off: the live pool serves the version's fp32 encoder, the
    one its metrics were measured with."""
    return dataclasses.replace(
        serving_state, settings=dataclasses.replace(serving_state.settings, int8=False)
    )


def _single(serving_state, name: str = "bank") -> str:
    project_svc.new_project(serving_state.db, name)
    for intent, texts in SINGLE.items():
        for text in texts:
            data_svc.add_utterance(
                serving_state.db, live(serving_state, name), text, intent, "train", create=True
            )
        data_svc.add_utterance(
            serving_state.db,
            live(serving_state, name),
            SINGLE_TEST[intent],
            intent,
            "test",
            create=True,
        )
    data_svc.create_intent(serving_state.db, live(serving_state, name), *GIFT)
    for text in GIFT_TEST:
        data_svc.add_utterance(
            serving_state.db, live(serving_state, name), text, GIFT[0], "test", create=True
        )
    return name


def _multi(serving_state, name: str = "hotel") -> str:
    project_svc.new_project(serving_state.db, name)
    for split, rows in (("train", MULTI), ("test", MULTI_TEST)):
        for text, labels in rows:
            data_svc.add_utterance(
                serving_state.db,
                live(serving_state, name),
                text,
                [x for x in labels.split("|") if x],
                split,
                create=True,
            )
    return name


def _retrain_and_activate(serving_state, project: str) -> int:
    job, _ = retrain_jobs.request_retrain(
        serving_state.training, live(serving_state, project), QUICK, enqueue=False
    )
    worker.execute_job(serving_state, job.id)
    done = retrain_jobs.job(serving_state.training, job.id)
    assert done.status == "succeeded", done.log
    assert done.model_version_id is not None
    version_svc.activate(
        serving_state.factories, live(serving_state, project), done.model_version_id
    )
    return done.model_version_id


def _test_rows(serving_state, project: str) -> list[tuple[str, set[str]]]:
    return [
        (r["text"], set(r["intents"].split("|")) - {OUT_OF_SCOPE, ""})
        for r in data_svc.table(serving_state.db, live(serving_state, project))
        if r["split"] == "test"
    ]


@pytest.mark.parametrize("anchors", ["1", "off"], ids=["anchors-on", "anchors-off"])
def test_a_versions_recorded_accuracy_is_the_live_predictors_on_its_test_rows(fp32, anchors):
    serving_state = fp32
    project = _single(serving_state)
    project_svc.set_settings(
        serving_state.db, live(serving_state, project), {"anchor_weight": anchors}
    )
    version = _retrain_and_activate(serving_state, project)
    recorded = version_svc.metrics(serving_state.db, live(serving_state, project), version)
    rows = _test_rows(serving_state, project)
    served = predict_svc.predict(
        serving_state.live, live(serving_state, project), [text for text, _ in rows]
    )
    hits = [row["top"] in gold for row, (_, gold) in zip(served, rows, strict=True)]
    assert recorded.n == len(rows)
    assert recorded.accuracy == pytest.approx(sum(hits) / len(hits), abs=1e-9)
    # the frozen base recorded beside it is the frozen Predictor's accuracy too
    version_svc.activate(serving_state.factories, live(serving_state, project), None)
    frozen = predict_svc.predict(
        serving_state.live, live(serving_state, project), [text for text, _ in rows]
    )
    base_hits = [row["top"] in gold for row, (_, gold) in zip(frozen, rows, strict=True)]
    assert recorded.base is not None
    assert recorded.base.accuracy == pytest.approx(sum(base_hits) / len(rows), abs=1e-9)
    if anchors != "off":  # the cold intent is predicted by its anchor, and that counts
        assert any(row["top"] == GIFT[0] for row in served)


def test_a_multi_label_versions_recorded_exact_match_is_the_live_predictors(fp32):
    """The head decides the label set, so anchors change the evidence, not the decision: the
    recorded exact match is the live one with anchors on and off (one retrain for both); the
    frozen base's, recorded beside it, is the frozen Predictor's (its head fitted on the frozen
    vectors)."""
    serving_state = fp32
    project = _multi(serving_state)
    version = _retrain_and_activate(serving_state, project)
    recorded = version_svc.metrics(serving_state.db, live(serving_state, project), version)
    assert recorded.multi_label and recorded.base is not None
    rows = _test_rows(serving_state, project)
    assert recorded.n == len(rows)
    for anchors in ("1", "off"):
        project_svc.set_settings(
            serving_state.db, live(serving_state, project), {"anchor_weight": anchors}
        )
        served = predict_svc.predict(
            serving_state.live, live(serving_state, project), [text for text, _ in rows]
        )
        exact = [set(row["labels"]) == gold for row, (_, gold) in zip(served, rows, strict=True)]
        assert recorded.exact_match == pytest.approx(sum(exact) / len(rows), abs=1e-9), anchors
    # the frozen base recorded beside it is the frozen Predictor's, once its head is fitted
    version_svc.activate(serving_state.factories, live(serving_state, project), None)
    _frozen_pool_with_head(serving_state, project)
    frozen = predict_svc.predict(
        serving_state.live, live(serving_state, project), [text for text, _ in rows]
    )
    exact = [set(row["labels"]) == gold for row, (_, gold) in zip(frozen, rows, strict=True)]
    assert recorded.base.exact_match == pytest.approx(sum(exact) / len(rows), abs=1e-9)
    served = eval_svc.live_evaluation(
        serving_state.factories, live(serving_state, project), version_svc.BASE
    )
    assert served.exact_match == pytest.approx(recorded.base.exact_match, abs=1e-9)


def _frozen_pool_with_head(serving_state, project: str):
    """The project's live pool once its background head fit has run."""
    from storage.projects import get_project

    with serving_state.db.session() as s:
        pid = get_project(s, str(project)).id
    serving_state.live.pool(pid)
    assert serving_state.live.heads.settle(timeout=120)
    pool = serving_state.live.pool(pid)
    assert pool.predictor.head is not None
    return pool


def test_the_try_tab_the_map_click_and_the_drill_down_name_the_same_intent(serving_state):
    project = _single(
        serving_state
    )  # anchors on by default: the cold intent is named by its anchor
    _, drilled = eval_svc.test_predictions(serving_state.factories, live(serving_state, project))
    by_text = {p.text: p for p in drilled}
    view = map_svc.compute_map(serving_state.maps, live(serving_state, project), method="pca")
    coloured = dict(zip(view.ids, view.predicted, strict=True))
    for text in [*GIFT_TEST, *SINGLE_TEST.values()]:
        tried = predict_svc.predict_one(serving_state.live, live(serving_state, project), text)[
            "top"
        ]
        row = by_text[text]
        clicked = map_svc.explain_utterance(
            serving_state.factories, live(serving_state, project), row.id
        )["predicted"]
        assert tried == clicked == row.predicted == coloured[row.id], text
    assert by_text[GIFT_TEST[0]].predicted == GIFT[0]


def test_out_of_scope_is_never_an_intent_in_a_map_a_confusion_matrix_or_a_per_intent_table(
    serving_state,
):
    project = _single(serving_state)
    for text in ("what's the weather tomorrow", "tell me a joke", "who won the match"):
        data_svc.add_utterance(
            serving_state.db,
            live(serving_state, project),
            text,
            [OUT_OF_SCOPE],
            "train",
            create=True,
        )
    for text in ("book me a flight", "play some music"):
        data_svc.add_utterance(
            serving_state.db,
            live(serving_state, project),
            text,
            [OUT_OF_SCOPE],
            "test",
            create=True,
        )
    view = map_svc.compute_map(serving_state.maps, live(serving_state, project), method="pca")
    assert all(OUT_OF_SCOPE not in gold for gold in view.gold)
    assert OUT_OF_SCOPE not in view.predicted
    assert OUT_OF_SCOPE not in view.geometry
    evaluation = eval_svc.live_evaluation(serving_state.factories, live(serving_state, project))
    assert OUT_OF_SCOPE not in evaluation.confusion["labels"]
    assert OUT_OF_SCOPE not in evaluation.per_intent
    _, drilled = eval_svc.test_predictions(serving_state.factories, live(serving_state, project))
    assert all(OUT_OF_SCOPE not in p.gold and p.predicted != OUT_OF_SCOPE for p in drilled)
    assert (
        eval_svc.confusions(
            serving_state.factories, live(serving_state, project), OUT_OF_SCOPE, None
        )
        == []
    )
    oos_row = next(
        r
        for r in data_svc.table(serving_state.db, live(serving_state, project))
        if r["text"] == "book me a flight"
    )
    clicked = map_svc.explain_utterance(
        serving_state.factories, live(serving_state, project), oos_row["id"]
    )
    assert OUT_OF_SCOPE not in clicked["gold"]


def test_a_frozen_multi_label_pool_decides_at_its_calibrated_threshold_until_its_head_is_fitted(
    serving_state,
):
    """Before a retrain a multi-label project's pool has no head of a version: until the one
    fitted on its frozen vectors lands, the live Predictor takes every intent whose score reaches
    the threshold calibrated out of fold on its train pool (not a fixed 0.5)."""
    from core.retrieval.knn_threshold import calibrate_knn_threshold
    from core.retrieval.predictor import MULTI_LABEL_KNN_THRESHOLD
    from storage.projects import get_project

    serving_state.live.heads.delay = 3600.0  # no fit runs during this test
    project = _multi(serving_state)
    with serving_state.db.session() as s:
        pool = serving_state.live.pool(get_project(s, str(project)).id)
    assert pool.predictor.multi_label and pool.predictor.head is None
    threshold = pool.predictor.thresholds["default"]
    assert threshold == calibrate_knn_threshold(pool.predictor)
    assert threshold != MULTI_LABEL_KNN_THRESHOLD
    for row in predict_svc.predict(
        serving_state.live, live(serving_state, project), [text for text, _ in MULTI_TEST]
    ):
        assert row["labels"] == [s["intent"] for s in row["intents"] if s["score"] >= threshold]


def test_a_frozen_multi_label_pool_serves_the_head_its_evaluation_and_bundle_fit(
    serving_state, tmp_path
):
    """The head fitted on the frozen vectors in the background is the one the live evaluation of
    the frozen base scores and a bundle of it carries: the live exact match is the evaluated
    one, the bundle decides every test row as the app does, and a new intent's labels reach
    the head at its next fit."""
    from app.services.projects import bundles
    from core.bundle import load

    project = _multi(serving_state)
    pool = _frozen_pool_with_head(serving_state, project)
    assert pool.predictor.head is not None
    assert set(pool.predictor.head.intents) == {"breakfast", "cancel", "parking", "refund"}
    rows = _test_rows(serving_state, project)
    texts = [text for text, _ in rows]
    served = predict_svc.predict(serving_state.live, live(serving_state, project), texts)
    assert all("probabilities" in row for row in served)  # the head decided
    # and the Try tab's sentence names the k-NN top as the nearest intent, not as the decision
    explained = predict_svc.predict_explained(
        serving_state.live, live(serving_state, project), texts[:1]
    )[0]["explanation"]
    assert explained["sentence"].startswith("Nearest intent *")
    exact = [set(row["labels"]) == gold for row, (_, gold) in zip(served, rows, strict=True)]
    evaluated = eval_svc.live_evaluation(serving_state.factories, live(serving_state, project))
    assert evaluated.exact_match == pytest.approx(sum(exact) / len(rows), abs=1e-9)
    path = tmp_path / "hotel.zip"
    bundles.export_bundle(serving_state.live, live(serving_state, project), path)
    with load(path) as bundle:
        assert [r["labels"] for r in bundle.predict(texts)] == [r["labels"] for r in served]
    # and its predict.py, without the app, decides with the same head
    from tests.core.bundle.test_standalone import assert_same, run_predict_py

    assert_same(served, run_predict_py(path, texts, tmp_path))
    for text in ("is the wifi free", "what is the wifi password", "wifi and parking please"):
        labels = ["wifi", "parking"] if "parking" in text else ["wifi"]
        data_svc.add_utterance(
            serving_state.db, live(serving_state, project), text, labels, "train", create=True
        )
    pool = _frozen_pool_with_head(serving_state, project)
    assert pool.predictor.head is not None and "wifi" in pool.predictor.head.intents
