"""One evaluation contract: the metrics a retrain records in the version history and the live
evaluation of the same version on the same data are the same numbers, also on rows with two
intents (the rule that had drifted: the history scored such a row by its first intent, the served
view counted a hit for either)."""

from __future__ import annotations

import pytest

from app import worker
from app.services.labelling import data as data_svc
from app.services.models import evaluation as eval_svc
from app.services.models import versions as version_svc
from app.services.projects.projects import new_project
from app.services.training import retrain_jobs
from tests.handles import live
from tests.samples import HOTEL_ROWS, HOTEL_TEST, QUICK, TINY

pytestmark = pytest.mark.slow


def _retrain(serving_state, project: str) -> int:
    job, _ = retrain_jobs.request_retrain(
        serving_state.training, live(serving_state, project), QUICK, enqueue=False
    )
    worker.execute_job(serving_state, job.id)
    done = retrain_jobs.job(serving_state.training, job.id)
    assert done.status == "succeeded", done.log
    assert done.model_version_id is not None
    return done.model_version_id


def test_single_label_history_and_live_agree_on_multi_intent_test_rows(serving_state):
    new_project(serving_state.db, "bank")
    for intent, texts in TINY.items():
        for i, text in enumerate(texts):
            data_svc.add_utterance(
                serving_state.db,
                live(serving_state, "bank"),
                text,
                intent,
                "test" if i == 4 else "train",
                create=True,
            )
    # two test rows carry two intents; the train pool stays single-label
    data_svc.add_utterance(
        serving_state.db,
        live(serving_state, "bank"),
        "lost my card, want my money back",
        "card_lost|refund",
        "test",
        create=True,
    )
    data_svc.add_utterance(
        serving_state.db,
        live(serving_state, "bank"),
        "hi, what's my balance",
        "balance|greeting",
        "test",
        create=True,
    )
    version = _retrain(serving_state, "bank")
    recorded = version_svc.metrics(serving_state.db, live(serving_state, "bank"), version)
    served = eval_svc.live_evaluation(serving_state.factories, live(serving_state, "bank"), version)
    assert recorded.primary == served.primary == "accuracy"
    assert recorded.n == served.n == sum(1 for _ in TINY) + 2
    for key in ("accuracy", "macro_f1"):
        assert served.value(key) == pytest.approx(recorded.value(key), abs=1e-9), key
    assert served.per_intent == recorded.per_intent


def test_multi_label_history_and_live_agree(serving_state):
    new_project(serving_state.db, "hotel")
    for split, rows in (("train", HOTEL_ROWS), ("test", HOTEL_TEST)):
        for text, labels in rows:
            data_svc.add_utterance(
                serving_state.db,
                live(serving_state, "hotel"),
                text,
                [x for x in labels.split("|") if x],
                split,
                create=True,
            )
    version = _retrain(serving_state, "hotel")
    recorded = version_svc.metrics(serving_state.db, live(serving_state, "hotel"), version)
    served = eval_svc.live_evaluation(
        serving_state.factories, live(serving_state, "hotel"), version
    )
    assert recorded.multi_label and served.multi_label
    assert recorded.primary == served.primary == "micro_f1"
    for key in ("micro_f1", "macro_f1", "exact_match", "accuracy"):
        assert served.value(key) == pytest.approx(recorded.value(key), abs=1e-6), key
