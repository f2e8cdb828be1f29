"""An anytime retrain (issue 63 item 1): one request serves a first version from its first pass
while the rest of the recipe trains; a later checkpoint replaces it only when it measures better;
a cancel keeps the best version measured. The real encoder, real SQLite, the worker's own
reporter."""

from __future__ import annotations

import threading
import time

import pytest

from app import worker
from app.services.models import predict as predict_svc
from app.services.models import versions as version_svc
from app.services.training import retrain_checkpoints
from app.services.training import retrain_jobs as svc
from storage.tables import ModelVersion
from tests.app.recording import RecordingReporter
from tests.handles import live
from tests.samples import make_tiny

pytestmark = pytest.mark.slow

# Three passes over TINY's 16 train utterances (4 steps a pass): a first pass of 4 steps,
# then 8 more.
ANYTIME = {"method": "convfit", "epochs": 3, "batch_size": 8}


def version(serving_state, version_id) -> ModelVersion:
    with serving_state.db.session() as s:
        mv = s.get(ModelVersion, version_id)
        s.expunge(mv)
        return mv


def test_a_first_version_serves_before_the_jobs_full_budget_ends(
    serving_state, tiny_encoder, monkeypatch
) -> None:
    make_tiny(serving_state, encoder=tiny_encoder)
    before = predict_svc.predict_one(
        serving_state.live, live(serving_state, "tiny"), "where is my card"
    )
    monkeypatch.setattr(worker, "JobReporter", RecordingReporter)
    RecordingReporter.rows = []
    view, _ = svc.request_retrain(
        serving_state.training, live(serving_state, "tiny"), ANYTIME, enqueue=False
    )
    worker.execute_job(serving_state, view.id)
    done = svc.job(serving_state.training, view.id)
    assert done.status == "succeeded", done.log
    assert "a first version after step 4 of 12" in done.log
    # the version served while training went on: registered at step 4, steps 5-12 after it
    improving = [r for r in RecordingReporter.rows if r.improving]
    assert improving and {r.model_version_id for r in improving} == {done.model_version_id}
    assert {r.served_step for r in improving} == {4} and {r.train_steps for r in improving} == {12}
    training = [r for r in improving if r.phase == "training" and r.total]
    assert training and training[-1].step > 4
    said = svc.describe(training[-1])  # what it measured and that it serves (issue 71 item 6)
    v = done.model_version_id
    assert said.startswith(f"v{v} (first pass, step 4 of 12) measured "), said
    assert ": serves · improving: step " in said and " of 12 · " in said
    # it was active (and answered) from its first pass on, if the gate let it
    mv = version(serving_state, done.model_version_id)
    if mv.metrics["gate"]["passed"]:
        after = predict_svc.predict_one(
            serving_state.live, live(serving_state, "tiny"), "where is my card"
        )
        assert after["neighbours"][0]["similarity"] != before["neighbours"][0]["similarity"]
    # one version for the job, whichever checkpoint it serves; the other's files are gone
    assert [
        h["version"] for h in version_svc.history(serving_state.db, live(serving_state, "tiny"))
    ] == [mv.id]
    models = serving_state.artifacts.path(f"projects/{mv.project_id}/models")
    assert [p.name for p in models.iterdir()] == [mv.artifact_path.rsplit("/", 1)[1]]


def test_a_later_checkpoint_replaces_the_first_only_when_it_measures_better(
    serving_state, tiny_encoder, monkeypatch
) -> None:
    """The same job twice: once as it measures, once with the last checkpoint's measurement
    made worse than the first's (a fault put into the measurement): then the version keeps its
    first pass, and the job says why."""
    make_tiny(serving_state, encoder=tiny_encoder)
    view, _ = svc.request_retrain(
        serving_state.training, live(serving_state, "tiny"), ANYTIME, enqueue=False
    )
    worker.execute_job(serving_state, view.id)
    first_job = svc.job(serving_state.training, view.id)
    served = version(serving_state, first_job.model_version_id)
    moved = "moves to it" in first_job.log
    assert served.metrics["steps"] == (12 if moved else 4)
    assert ("not better than" in first_job.log) is not moved

    real = retrain_checkpoints.measure
    scores: list[float] = []

    def worse_at_the_end(*args):
        measured = real(*args)
        scores.append(measured.new.accuracy)
        if len(scores) == 2:  # the last checkpoint: below the first one
            import dataclasses

            new = dataclasses.replace(measured.new, accuracy=scores[0] - 0.5)
            measured = dataclasses.replace(measured, new=new)
        return measured

    monkeypatch.setattr(retrain_checkpoints, "measure", worse_at_the_end)
    view, _ = svc.request_retrain(
        serving_state.training, live(serving_state, "tiny"), ANYTIME, enqueue=False
    )
    worker.execute_job(serving_state, view.id)
    done = svc.job(serving_state.training, view.id)
    assert done.status == "succeeded", done.log
    mv = version(serving_state, done.model_version_id)
    assert mv.metrics["steps"] == 4 and mv.metrics.get("of_steps") == 12
    assert mv.config["epochs"] == 1  # what trains this checkpoint again: the first pass alone
    assert "step 12 of 12 measured accuracy" in done.log and "keeps first pass" in done.log
    assert mv.note.startswith("first pass, step 4 of 12.")


def test_cancel_while_improving_keeps_the_best_version_measured(
    serving_state, tiny_encoder
) -> None:
    make_tiny(serving_state, encoder=tiny_encoder)
    long = {**ANYTIME, "epochs": 100}  # a first pass of 4 steps, then 396 more
    view, _ = svc.request_retrain(
        serving_state.training, live(serving_state, "tiny"), long, enqueue=False
    )
    runner = threading.Thread(target=worker.execute_job, args=(serving_state, view.id))
    runner.start()
    deadline = time.monotonic() + 180
    while (
        not (now := svc.job(serving_state.training, view.id)).improving or now.phase != "training"
    ):
        assert now.active and time.monotonic() < deadline, now.log
        time.sleep(0.1)
    asked = svc.cancel(serving_state.db, view.id)
    assert asked.status == "running" and "keeps serving as it is" in asked.message
    runner.join(60)
    assert not runner.is_alive()
    done = svc.job(serving_state.training, view.id)
    assert done.status == "cancelled", done.log
    assert done.model_version_id == now.model_version_id is not None
    assert "keeps serving its first pass, step 4 of 400 in fp32" in done.message
    mv = version(serving_state, done.model_version_id)
    assert mv.metrics["steps"] == 4 and serving_state.artifacts.verify(
        mv.artifact_path, mv.artifact_sha256
    )
    history = version_svc.history(serving_state.db, live(serving_state, "tiny"))
    assert [h["version"] for h in history] == [mv.id]
    assert history[0]["active"] is mv.metrics["gate"]["passed"]
