"""Fairness per user across projects (issue 73 item 6): with one designer's automatic retrains of
three projects queued, another designer's retrain request had not started after 12 min 52 s. The
worker's own task (the real Huey queue) now takes the fairest queued job, not its message's: a
request goes ahead of every automatic job, and every queued job keeps a message of its own (the
lost-message rule holds)."""

from __future__ import annotations

import dataclasses
import time

import pytest

from app import worker
from app.access import auth
from app.services.labelling import data as data_svc
from app.services.projects import settings as settings_svc
from app.services.projects.members import add_member
from app.services.training import auto_retrain
from app.services.training import retrain_jobs as svc
from app.serving.compute import budget_for
from tests.handles import live
from tests.samples import QUICK, make_tiny

pytestmark = pytest.mark.slow


def test_a_manual_request_of_one_user_goes_ahead_of_queued_automatic_ones_of_another(
    serving_state, tiny_encoder, monkeypatch
) -> None:
    ana = auth.add_user(serving_state.db, "ana", "designer", "ana-password")
    ben = auth.add_user(serving_state.db, "ben", "designer", "ben-password")
    for name, who in (("a1", "ana"), ("a2", "ana"), ("a3", "ana"), ("b", "ben")):
        make_tiny(serving_state, name, encoder=tiny_encoder)
        add_member(serving_state.db, live(serving_state, name).handle(), who, "designer")
    settings_svc.change(serving_state.live, live(serving_state, "b"), {"auto_retrain": "off"})
    for name in ("a1", "a2", "a3"):  # ana labels her three projects
        data_svc.add_utterance(
            serving_state.db, live(serving_state, name, ana), "my card vanished", "card_lost"
        )
    quiet = dataclasses.replace(budget_for("cpu"), auto_quiet_s=0.2)
    time.sleep(0.3)
    autos = auto_retrain.Watcher(serving_state.training, quiet).start_due()
    assert sorted(j.project_id for j in autos) == sorted(
        live(serving_state, n).id for n in ("a1", "a2", "a3")
    )
    mine, created = svc.request_retrain(
        serving_state.training, live(serving_state, "b", ben), QUICK
    )
    assert created and mine.user_id == ben.id

    # the worker takes the queue's first message (ana's first job) and runs its task
    huey, _ = worker.make_queue(serving_state.settings)
    monkeypatch.setattr(
        worker, "_worker_ctx", serving_state
    )  # the worker's context: this process's
    first = huey.dequeue()
    assert first is not None and first.args == (autos[0].id,)
    huey.execute(first)
    done = svc.job(serving_state.training, mine.id)
    assert done.status == "succeeded", done.log  # ben's request went first
    assert all(svc.job(serving_state.training, j.id).status == "queued" for j in autos)
    # each queued job still has its own message: none is failed as lost
    assert serving_state.training.enqueue is not None
    assert serving_state.training.enqueue.pending() >= {j.id for j in autos}

    # ana's jobs end (cancelled); the messages left wake the worker for nothing more
    for j in autos:
        svc.cancel(serving_state.db, j.id)
    while (task := huey.dequeue()) is not None:
        huey.execute(task)
    assert [svc.job(serving_state.training, j.id).status for j in autos] == ["cancelled"] * 3
    assert svc.job(serving_state.training, mine.id).status == "succeeded"
