"""A model store outage while a job uploads its version costs the job nothing (issue 73 item 14):
S3 refusing for 33 s failed the running retrain whose upload met it ("the model store is not
answering", 40 s of training thrown away), while the API's own calls answered 503 with
``Retry-After`` and recovered. Now the job's upload tries again, 1, 2, 4… s apart
(:mod:`storage.patience`), its log says so, and the job ends with its version once the bucket
answers; a worker's stop during the wait still hands the job back. The bucket (moto's S3 server)
is reached through a :class:`tests.servers.Relay` the test closes: connections refused, for
real."""

from __future__ import annotations

import threading
from urllib.parse import urlsplit

import pytest

from app import worker
from app.services.models import versions as version_svc
from app.services.training import retrain_jobs as svc
from app.worker.stopping import StopRequest
from storage.job_phases import SAVING
from storage.remote_artifacts import MARKER
from storage.tables import ModelVersion
from tests.handles import live
from tests.samples import QUICK, make_tiny
from tests.servers import Relay

pytestmark = pytest.mark.slow

WAITING = "the model store is not answering ("  # the job's line as it waits


@pytest.fixture
def bucket_behind_relay(s3, tmp_path, monkeypatch):
    """A worker's serving state whose artifacts are in an S3 bucket reached through a relay;
    yields (relay, serving state, bucket)."""
    from app.config import load_settings
    from app.serving.state import ServingState

    endpoint = urlsplit(s3.endpoint)
    relay = Relay((endpoint.hostname or "127.0.0.1", endpoint.port or 80))
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{relay.port}")
    bucket = s3.new_bucket()
    monkeypatch.setenv("INTENT_STUDIO_ARTIFACTS_URL", f"s3://{bucket}/studio")
    serving_state = ServingState.open(load_settings(tmp_path / "worker"))
    serving_state.training.enqueue = worker.queue_for(serving_state.settings)
    yield relay, serving_state, bucket
    relay.down()
    serving_state.close()


def outage_as_it_saves(relay: Relay, then):
    """The worker's reporter, whose bucket goes away as its job starts saving its first version
    (refused until ``then(reporter)``, called once the job says it waits for the bucket)."""

    class Outage(worker.JobReporter):
        def log(self, line, *, phase=None) -> None:
            if phase == SAVING and not getattr(type(self), "down", False):
                type(self).down = True
                relay.down()
            super().log(line, phase=phase)
            if line.startswith(WAITING) and not getattr(type(self), "waited", False):
                type(self).waited = True
                then(self)

    return Outage


def test_an_outage_during_a_jobs_upload_is_waited_out_and_the_job_ends_with_its_version(
    bucket_behind_relay, s3, tiny_encoder, monkeypatch
) -> None:
    relay, serving_state, bucket = bucket_behind_relay
    make_tiny(serving_state, encoder=tiny_encoder)
    view, _ = svc.request_retrain(
        serving_state.training,
        live(serving_state, "tiny"),
        {**QUICK, "first_pass": 0},
        enqueue=False,
    )
    back = outage_as_it_saves(relay, lambda _: threading.Timer(2.0, relay.up).start())
    monkeypatch.setattr(worker, "JobReporter", back)
    worker.execute_job(serving_state, view.id, StopRequest())
    done = svc.job(serving_state.training, view.id)
    assert done.status == "succeeded", done.log
    assert WAITING in done.log  # the Train tab said why it waited
    history = version_svc.history(serving_state.db, live(serving_state, "tiny"))
    assert [h["version"] for h in history] == [done.model_version_id]
    with serving_state.db.session() as s:
        mv = s.get(ModelVersion, done.model_version_id)
    keys = s3.keys(bucket)
    assert f"studio/{mv.artifact_path}/{MARKER}" in keys  # committed in the bucket, whole
    assert serving_state.artifacts.verify(mv.artifact_path, mv.artifact_sha256)


def test_a_worker_stopped_while_its_upload_waits_hands_the_job_back(
    bucket_behind_relay, tiny_encoder, monkeypatch
) -> None:
    relay, serving_state, _ = bucket_behind_relay
    make_tiny(serving_state, encoder=tiny_encoder)
    view, _ = svc.request_retrain(
        serving_state.training,
        live(serving_state, "tiny"),
        {**QUICK, "first_pass": 0},
        enqueue=False,
    )
    stop = StopRequest()  # the worker's SIGTERM, with no grace left, once the job waits
    stopped = outage_as_it_saves(relay, lambda _: stop.request(grace=0.0))
    monkeypatch.setattr(worker, "JobReporter", stopped)
    worker.execute_job(serving_state, view.id, stop)
    back = svc.job(serving_state.training, view.id)
    assert stop.requested, back.log
    assert back.status == "queued" and "queued again" in back.message, back.log
    assert view.id in serving_state.training.enqueue.pending()
    assert version_svc.history(serving_state.db, live(serving_state, "tiny")) == []
