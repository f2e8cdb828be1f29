"""What a retrain does not do twice: an evaluation of an unchanged version on unchanged rows is
read, not measured again (by the next retrain, the live evaluation and the report)."""

from __future__ import annotations

import pytest

from app import worker
from app.services.labelling import data as data_svc
from app.services.models import evaluation as evaluation_svc
from app.services.models.versions import ACTIVE, BASE
from app.services.projects import projects as project_svc
from app.services.training import retrain_jobs
from storage.tables import ModelVersion
from tests.handles import live
from tests.samples import QUICK, make_tiny

pytestmark = pytest.mark.slow


@pytest.fixture
def measured(monkeypatch) -> list[int]:
    """Counts the evaluations measured (the k-NN scoring each of them runs once)."""
    calls: list[int] = []
    real = evaluation_svc.evaluate_knn

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(evaluation_svc, "evaluate_knn", counting)
    return calls


def _retrain(serving_state, seed: int) -> ModelVersion:
    """A retrain (another seed each time: a new encoder, never the active one again)."""
    view, _ = retrain_jobs.request_retrain(
        serving_state.training, live(serving_state, "tiny"), {**QUICK, "seed": seed}, enqueue=False
    )
    worker.execute_job(serving_state, view.id)
    done = retrain_jobs.job(serving_state.training, view.id)
    assert done.status == "succeeded", done.log
    with serving_state.db.session() as s:
        mv = s.get(ModelVersion, done.model_version_id)
        s.expunge(mv)
    return mv


def test_an_unchanged_frozen_base_and_active_version_are_not_evaluated_twice(
    serving_state, tiny_encoder, measured
):
    make_tiny(serving_state, encoder=tiny_encoder)
    first = _retrain(serving_state, 1)
    assert len(measured) == 2  # the new version and the frozen base (also the active one)
    second = _retrain(serving_state, 2)
    # the same rows: the frozen base and the active version (the first) are read, not measured
    assert len(measured) == 3
    assert second.metrics["base"] == first.metrics["base"]
    active = first.id if first.metrics["gate"]["passed"] else None
    assert second.metrics["reference"]["version"] == active
    # the live evaluation of the active version and of the frozen base: what the retrain measured
    measured_live = evaluation_svc.live_evaluation(
        serving_state.factories, live(serving_state, "tiny"), ACTIVE
    )
    frozen = evaluation_svc.live_evaluation(
        serving_state.factories, live(serving_state, "tiny"), BASE
    )
    assert len(measured) == 3
    assert frozen.accuracy == first.metrics["base"]["accuracy"]
    if second.metrics["gate"]["passed"]:
        assert measured_live.accuracy == second.metrics["accuracy"]
    # a row changed: everything is measured again (the new version, the frozen base and the
    # active version when one of the two is)
    data_svc.add_utterance(
        serving_state.db,
        live(serving_state, "tiny"),
        "my card still has not come",
        "card_lost",
        "test",
    )
    third = _retrain(serving_state, 3)
    versions = 1 if third.metrics["reference"]["version"] is not None else 0
    assert len(measured) == 3 + 2 + versions
    assert third.metrics["base"]["n"] == first.metrics["base"]["n"] + 1


def test_a_setting_that_decides_measures_again(serving_state, tiny_encoder, measured):
    make_tiny(serving_state, encoder=tiny_encoder)
    evaluation_svc.live_evaluation(serving_state.factories, live(serving_state, "tiny"), BASE)
    evaluation_svc.live_evaluation(serving_state.factories, live(serving_state, "tiny"), BASE)
    assert len(measured) == 1
    project_svc.set_settings(
        serving_state.db, live(serving_state, "tiny"), {"anchor_weight": 0}
    )  # the anchors leave the pool
    evaluation_svc.live_evaluation(serving_state.factories, live(serving_state, "tiny"), BASE)
    assert len(measured) == 2
