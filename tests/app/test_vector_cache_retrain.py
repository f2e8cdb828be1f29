"""After a retrain, the app (another process on the same data directory) encodes nothing for the
project's first card, and finds the new version's fp32 vectors of every utterance the retrain
evaluated (what the Map, a compare and the report read)."""

from __future__ import annotations

import dataclasses

import pytest

from app import worker
from app.config import load_settings
from app.services.projects.projects import ensure_demo_project
from app.services.queue import queue
from app.services.training import retrain_jobs
from app.serving import pools
from app.serving.state import ServingState
from storage.tables import ModelVersion
from storage.utterances import list_utterances
from tests.handles import live
from tests.samples import QUICK

pytestmark = pytest.mark.slow


def test_after_a_retrain_the_app_encodes_nothing_for_the_first_card(tmp_path, monkeypatch):
    settings = dataclasses.replace(load_settings(tmp_path / "data"), int8=True)
    trainer = ServingState.open(settings)  # the worker's process
    demo = live(trainer, ensure_demo_project(trainer.db))
    job, _ = retrain_jobs.request_retrain(trainer.training, demo, QUICK, enqueue=False)
    worker.execute_job(trainer, job.id)
    version_id = retrain_jobs.job(trainer.training, job.id).model_version_id
    assert version_id is not None
    trainer.close()

    app = ServingState.open(settings)  # the app, started (again) after the retrain
    calibrated: list[int] = []
    real = pools.calibrate_predictor
    monkeypatch.setattr(
        pools, "calibrate_predictor", lambda *a, **k: calibrated.append(1) or real(*a, **k)
    )
    found, _ = queue.next_item(app.live, demo, [])
    assert calibrated == []  # the retrain's worker calibrated the served pool: read, not redone
    assert found is not None
    assert app.live.cache.encoded == 0
    with app.db.session() as s:
        mv = s.get(ModelVersion, version_id)
        assert mv is not None
        s.expunge(mv)
        rows = list_utterances(s, demo.id)
    evaluated = [r.text for r in rows if r.labels]  # train and test: what the retrain scored
    assert app.live.cache.missing(app.models.encoder_for_version(mv), evaluated) == []
