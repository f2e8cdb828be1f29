"""Retrains that start from the labels (issue 63 item 2): enough new or changed labels and a
quiet spell start one automatic retrain; labels given while it runs start the next one after it,
never two at once; the project setting off starts none; the queue stays fair across projects.
Real SQLite, the real Huey queue and the worker's own job runner."""

from __future__ import annotations

import dataclasses
import os
import threading
import time

import pytest

from app import worker
from app.perimeter.in_use import WARMING, WARMING_STALE_S, Activity, warming
from app.services.labelling import data as data_svc
from app.services.labelling import history
from app.services.models import versions as version_svc
from app.services.projects import reports
from app.services.projects import settings as settings_svc
from app.services.projects.projects import new_project
from app.services.training import auto_retrain
from app.services.training import retrain_jobs as svc
from app.serving.compute import budget_for
from app.ui.queue_model import tick
from storage import jobs
from tests.handles import live
from tests.samples import make_tiny

pytestmark = pytest.mark.slow

QUIET = 0.3  # the quiet spell, shortened for the test


@pytest.fixture
def watcher(serving_state):
    budget = dataclasses.replace(budget_for("cpu"), auto_quiet_s=QUIET)
    return auto_retrain.Watcher(serving_state.training, budget)


def label(serving_state, name: str, n: int, intent: str = "card_lost", start: int = 0) -> None:
    for i in range(start, start + n):
        data_svc.add_utterance(
            serving_state.db,
            live(serving_state, name),
            f"lost my card again {i}",
            intent,
            create=True,
        )


def quiet() -> None:
    time.sleep(QUIET + 0.1)


def small(serving_state, name: str, after: int = 5) -> None:
    """TINY, its automatic retrain after ``after`` labels, its first retrain done."""
    make_tiny(serving_state, name)
    settings_svc.change(
        serving_state.live, live(serving_state, name), {"auto_retrain_after": str(after)}
    )
    view, _ = svc.request_retrain(
        serving_state.training,
        live(serving_state, name),
        {"epochs": 1, "batch_size": 8},
        enqueue=False,
    )
    worker.execute_job(serving_state, view.id)
    assert svc.job(serving_state.training, view.id).status == "succeeded"


def test_n_labels_and_a_pause_start_one_retrain_labels_during_it_the_next_never_two(
    serving_state, watcher
) -> None:
    small(serving_state, "tiny")
    label(serving_state, "tiny", 4)
    quiet()
    assert watcher.start_due() == []  # 4 of 5
    label(serving_state, "tiny", 1, start=4)
    assert watcher.start_due() == []  # 5 of 5, but still labelling: no pause yet
    quiet()
    [first] = watcher.start_due()
    assert first.trigger == "auto" and first.status == "queued"
    assert watcher.start_due() == []  # queued: one job per project at a time
    runner = threading.Thread(target=worker.execute_job, args=(serving_state, first.id))
    runner.start()
    deadline = time.monotonic() + 120
    while svc.job(serving_state.training, first.id).phase in (
        "",
        "preparing",
    ):  # its data not read yet
        assert time.monotonic() < deadline
        time.sleep(0.05)
    label(
        serving_state, "tiny", 6, start=5
    )  # while it runs, after it read its data: for the next one
    quiet()
    assert watcher.start_due() == [] or not runner.is_alive()  # never two at once
    runner.join(120)
    done = svc.job(serving_state.training, first.id)
    assert done.status == "succeeded", done.log
    # "auto" in Versions, Activity and the report
    [newest, *_] = version_svc.history(serving_state.db, live(serving_state, "tiny"))
    assert newest["version"] == done.model_version_id and newest["trigger"] == "auto"
    retrains = [
        a
        for a in history.activity(serving_state.db, live(serving_state, "tiny"))
        if a["user"] == "auto"
    ]
    assert [a["action"] for a in retrains] == ["retrain (auto)"] and not retrains[0]["undoable"]
    said = retrains[0]["example"]  # its version named once ("v2: v2: accuracy …" before)
    assert (
        said.startswith(f"v{done.model_version_id}: ")
        and said.count(f"v{done.model_version_id}:") == 1
    ), said
    if live(serving_state, "tiny").active_version_id == done.model_version_id:
        note = reports.version_note(serving_state.db, live(serving_state, "tiny").handle())
        assert note.startswith("retrained automatically after new labels")
    [second] = watcher.start_due()  # the labels given meanwhile make the next one
    assert second.id != first.id and second.trigger == "auto"
    worker.execute_job(serving_state, second.id)
    quiet()
    assert watcher.start_due() == []  # nothing new since: none
    assert (
        auto_retrain.state(
            serving_state.db, live(serving_state, "tiny").handle(), budget_for("cpu")
        ).weight
        == 0
    )


def test_the_setting_off_starts_none_and_a_refused_project_is_not_asked_again(
    serving_state, watcher
) -> None:
    small(serving_state, "tiny")
    settings_svc.change(serving_state.live, live(serving_state, "tiny"), {"auto_retrain": "off"})
    label(serving_state, "tiny", 8)
    quiet()
    assert watcher.start_due() == []
    words = auto_retrain.state(
        serving_state.db, live(serving_state, "tiny").handle(), budget_for("cpu")
    ).words
    assert words.startswith("Off: the encoder is retrained only when someone asks")
    # a deployment whose workers do not watch (INTENT_STUDIO_AUTO_RETRAIN=off) says so, whatever
    # the project's switch says (it said "On: …" there)
    settings_svc.change(serving_state.live, live(serving_state, "tiny"), {"auto_retrain": "on"})
    serving_state.live.auto_retrain = False
    try:
        view = settings_svc.view(serving_state.live, live(serving_state, "tiny"))
        # the Label tab's line said "Retrain by itself after 20 new labels: on" alone there
        line, _ = tick(
            serving_state.training, serving_state.live, live(serving_state, "tiny"), None
        )
    finally:
        serving_state.live.auto_retrain = True
        settings_svc.change(
            serving_state.live, live(serving_state, "tiny"), {"auto_retrain": "off"}
        )
    assert view.auto_brief.startswith("Off for this deployment (INTENT_STUDIO_AUTO_RETRAIN=off)")
    assert ": on (but off for this deployment)</a>" in line
    assert (
        "switch (on)" in view.auto_brief
        and "automatic retrains are off" in view.effects["auto_retrain_after"]
    )
    # a project its labels cannot train (one intent): refused once, not again until it changes
    new_project(serving_state.db, "one")
    settings_svc.change(serving_state.live, live(serving_state, "one"), {"auto_retrain_after": "2"})
    label(serving_state, "one", 3)
    quiet()
    assert watcher.start_due() == [] and serving_state.db  # refused: too few intents
    refused = dict(watcher.refused)
    assert set(refused) == {live(serving_state, "one").id}
    assert watcher.start_due() == [] and watcher.refused == refused
    with serving_state.db.session() as s:
        assert jobs.latest_job(s, live(serving_state, "one").id) is None


def test_none_starts_while_the_server_beside_it_warms_up(serving_state, watcher) -> None:
    """A fresh import's labels call for a retrain at once; it waits for the server's warm-up
    (the first card waits for that), and starts at the next look after it; a warm-up whose
    server was killed holds nothing once its file is stale."""
    make_tiny(serving_state, "tiny")  # its imported labels are new labels: due at once
    quiet()
    with warming(serving_state.settings.data_dir):
        assert watcher.start_due() == []
        assert watcher.start_due() == []
    [started] = watcher.start_due()
    assert started.trigger == "auto"
    make_tiny(serving_state, "other")
    quiet()
    stale = Activity(serving_state.settings.data_dir, WARMING)  # a server kill -9'd while warming
    stale.touch()
    then = time.time() - WARMING_STALE_S - 1
    os.utime(stale.path, (then, then))
    [other] = watcher.start_due()
    assert other.id != started.id and other.trigger == "auto"


def test_each_project_gets_its_turn_however_fast_another_labels(serving_state, watcher) -> None:
    """Two projects whose labels both call for a retrain: one job each, queued in turn; the
    busier project's next one waits for its own to end, behind the other's."""
    small(serving_state, "busy", after=2)
    small(serving_state, "calm", after=2)
    label(serving_state, "busy", 3)
    label(serving_state, "calm", 3)
    quiet()
    started = watcher.start_due()
    assert sorted(j.project_id for j in started) == sorted(
        [live(serving_state, "busy").id, live(serving_state, "calm").id]
    )
    pending = serving_state.training.enqueue.pending()
    assert {j.id for j in started} <= pending
    label(
        serving_state, "busy", 10, start=3
    )  # the busy project labels on: still one job of its own
    quiet()
    assert watcher.start_due() == []
    with serving_state.db.session() as s:
        queued = [jobs.active_job(s, live(serving_state, n).id) for n in ("busy", "calm")]
    assert all(q is not None and q.status == "queued" for q in queued)


def test_the_servers_warm_up_says_it_warms_until_it_ends(serving_state, monkeypatch) -> None:
    """The file the watcher reads is fresh while `serve`'s warm-up scores the first cards, and
    gone once the server is warm."""
    import gc

    from app.cli import server
    from app.services.queue import queue

    seen = []
    monkeypatch.setattr(
        queue,
        "warm_up",
        lambda live, fan_out=None: seen.append(
            Activity(serving_state.settings.data_dir, WARMING).recent(WARMING_STALE_S)
        ),
    )
    done = threading.Thread(target=lambda: None)
    done.start()
    try:
        server._warm_up(serving_state, done)
    finally:
        gc.unfreeze()
    assert seen == [True] and serving_state.readiness.ready
    assert not Activity(serving_state.settings.data_dir, WARMING).path.exists()
