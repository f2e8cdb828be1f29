"""One retrain job reads each encoder from disk once at most (issue 44), and none in a worker
that warmed up (issue 55): the base is read once, when the worker starts, copied for training
and shared with the frozen base's evaluation; the trained model evaluated, calibrated, served
and exported from memory, never read back from the artifact it wrote."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from app import worker
from app.services.models.evaluation import evaluation_inputs
from app.services.training import retrain_jobs
from app.services.training.retrain_warm import warm_up_worker
from core.encoding import registry
from core.training import load_trained
from storage.tables import ModelVersion
from tests.handles import live
from tests.samples import QUICK

pytestmark = pytest.mark.slow


def test_a_retrain_job_loads_each_encoder_once_through_the_worker(tmp_path, monkeypatch):
    from app.config import load_settings
    from app.services.projects.projects import ensure_demo_project
    from app.serving.state import ServingState

    settings = load_settings(tmp_path / "data")
    serving_state = ServingState.open(dataclasses.replace(settings, int8=True))
    try:
        demo = live(serving_state, ensure_demo_project(serving_state.db))
        job, _ = retrain_jobs.request_retrain(serving_state.training, demo, QUICK, enqueue=False)
        loads: list[Path] = []
        real = registry.load_sentence_transformer

        def counting(path, device=None):
            loads.append(Path(path))
            return real(path, device)

        # a fresh worker process: no encoder loaded yet; it warms up when it starts (issue 55):
        # the base is read then, and a training step runs, before any job
        monkeypatch.setattr(registry, "_loaded", {})
        monkeypatch.setattr(registry, "load_sentence_transformer", counting)
        warm_up_worker(serving_state.live, serving_state.models.budget).join()
        assert loads == [registry.resolve_path("minilm")]
        assert (
            "minilm",
            serving_state.settings.device or registry.default_device(),
        ) in registry._loaded
        worker.execute_job(serving_state, job.id)
        done = retrain_jobs.job(serving_state.training, job.id)
        assert done.status == "succeeded", done.log
        assert loads == [registry.resolve_path("minilm")]  # the job read no encoder from disk

        with serving_state.db.session() as s:
            mv = s.get(ModelVersion, done.model_version_id)
            artifact = serving_state.artifacts.path(mv.artifact_path)
            metrics = mv.metrics
        assert metrics["int8"]["n"] > 0  # the int8 export and its parity check ran
        # the frozen base the evaluation used is what a fresh load gives (training had a copy)
        texts = ["my card has not arrived", "hello there", "I want my money back"]
        base = registry.load_encoder("minilm", device=serving_state.settings.device)
        fresh = real(registry.resolve_path("minilm"), serving_state.settings.device)
        np.testing.assert_array_equal(
            base.encode(texts), registry.Encoder(fresh, "f", "f").encode(texts)
        )
        # what the job cached for the new encoder is the artifact's, read back: the same key
        # (fingerprint) and the same vectors
        monkeypatch.setattr(registry, "load_sentence_transformer", real)
        read = load_trained(artifact, device=serving_state.settings.device)
        tested = evaluation_inputs(serving_state.factories, demo)[2].test_texts
        assert tested and not serving_state.live.cache.missing(read, tested)
        np.testing.assert_allclose(
            serving_state.live.cache.encode(read, tested), read.encode(tested), atol=1e-5
        )
    finally:
        serving_state.close()
