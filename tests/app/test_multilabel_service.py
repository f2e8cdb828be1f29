"""A multi-label project end to end through the services: retrain trains the head inside the
version, predictions carry its probabilities and label sets next to the k-NN evidence, evaluation
is multi-label, and the bundle decides the same label sets."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from app import worker
from app.services.labelling import data as data_svc
from app.services.models import evaluation as eval_svc
from app.services.models import predict as predict_svc
from app.services.projects import bundles as bundle_svc
from app.services.projects.projects import new_project
from app.services.training import retrain_jobs
from core.bundle import load
from core.multilabel.head import HEAD_DIR
from storage.tables import ModelVersion, TrainingJob
from tests.handles import live
from tests.samples import HOTEL_ROWS as ROWS
from tests.samples import HOTEL_TEST as TEST
from tests.samples import QUICK

pytestmark = pytest.mark.slow


@pytest.fixture
def hotel(serving_state):
    new_project(serving_state.db, "hotel")
    for split, rows in (("train", ROWS), ("test", TEST)):
        for text, labels in rows:
            data_svc.add_utterance(
                serving_state.db,
                live(serving_state, "hotel"),
                text,
                [x for x in labels.split("|") if x],
                split,
                create=True,
            )
    return live(serving_state, "hotel")


@pytest.mark.parametrize(
    "bad", [{"threshold": 1.5}, {"threshold": 0}, {"threshold": "high"}, {"tune_thresholds": 3}]
)
def test_bad_head_options_are_refused_before_queueing(serving_state, hotel, bad):
    with pytest.raises(ValueError, match="threshold"):
        retrain_jobs.request_retrain(
            serving_state.training, live(serving_state, hotel), {**QUICK, **bad}, enqueue=False
        )
    with serving_state.db.session() as s:
        assert s.scalar(select(func.count()).select_from(TrainingJob)) == 0


def test_multi_label_project_trains_a_head_and_predicts_label_sets(serving_state, hotel, tmp_path):
    job, _ = retrain_jobs.request_retrain(
        serving_state.training,
        live(serving_state, hotel),
        {**QUICK, "threshold": 0.4},
        enqueue=False,
    )
    worker.execute_job(serving_state, job.id)
    done = retrain_jobs.job(serving_state.training, job.id)
    assert done.status == "succeeded", done.log
    with serving_state.db.session() as s:
        mv = s.get(ModelVersion, done.model_version_id)
        metrics, folder = mv.metrics, serving_state.artifacts.path(mv.artifact_path)
    assert (folder / HEAD_DIR / "head.json").is_file()
    assert metrics["primary"] == "micro_f1" and metrics["multi_label"]
    assert metrics["threshold"] == 0.4
    assert metrics["n"] == len(TEST)  # the no-intent test row is scored too
    assert {"exact_match", "micro_f1", "macro_f1", "cooccurrence"} <= set(metrics)
    assert "micro_f1" in metrics["base"]  # the frozen encoder + head, on the same split

    from app.services.models.versions import activate

    activate(serving_state.factories, live(serving_state, hotel), mv.id)
    out = predict_svc.predict_one(
        serving_state.live, live(serving_state, hotel), "cancel my room and refund the deposit"
    )
    probs = out["probabilities"]
    assert set(probs) == {"breakfast", "cancel", "parking", "refund"}
    assert out["labels"] == sorted(n for n, p in probs.items() if p >= 0.4)
    assert out["threshold"] == 0.4
    assert out["neighbours"], "the k-NN evidence stays beside the head's decision"

    measured = eval_svc.live_evaluation(serving_state.factories, live(serving_state, hotel))
    assert measured.multi_label and measured.exact_match is not None
    assert 0.0 <= measured.exact_match <= 1.0

    bundle = tmp_path / "hotel.zip"
    bundle_svc.export_bundle(serving_state.live, live(serving_state, hotel), bundle)
    queries = ["cancel my room and refund the deposit", "parking and breakfast?", "hello"]
    app_out = predict_svc.predict(serving_state.live, live(serving_state, hotel), queries)
    with load(bundle) as predictor:
        assert predictor.head is not None
        for a, b in zip(app_out, predictor.predict(queries), strict=True):
            assert a["labels"] == b["labels"]
            for name, p in a["probabilities"].items():
                assert b["probabilities"][name] == pytest.approx(p, abs=1e-3)
