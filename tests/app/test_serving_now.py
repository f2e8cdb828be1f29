"""The Label tab's model line (issue 65 item 8): which version serves and its accuracy,
"improving…" with a link to the Train tab while a retrain (an automatic one) runs, and one line
of what changed when another model starts serving, before → after."""

from __future__ import annotations

import html

import pytest

from app.services.training.serving_now import Serving, what_changed
from app.ui.queue_model import model_html
from storage.job_view import JobView


def job(status: str = "running", **kw) -> JobView:
    fields = {"phase": "training", "step": 60, "total": 100, "eta_seconds": 30.0}
    fields.update(kw)
    return JobView(
        3, 1, status, fields.pop("phase"), fields.pop("step"), fields.pop("total"), 0.4,
        fields.pop("eta_seconds"), "step 60 of 100", "", 8, {}, fields.pop("progress", 0.5), 20.0,
        **fields,
    )  # fmt: skip


V7 = Serving(1, 7, "1:7:aa", 0.812, 0.700, (100, 100), None)
V8_FIRST = Serving(1, 8, "1:8:bb", 0.804, 0.700, (25, 100), None)
V8_ALL = Serving(1, 8, "1:8:cc", 0.840, 0.700, (100, 100), None)
BASE = Serving(1, None, "1:base", None, None, (None, None), None)


def test_the_line_says_what_serves_and_its_accuracy() -> None:
    assert "Serving <b>v7 · accuracy 81.2 %</b>" in model_html(V7)
    assert "Serving <b>the frozen base encoder</b>" in model_html(BASE)
    assert "improving" not in model_html(V7) and "data-tab" not in model_html(V7)


def test_an_automatic_retrain_says_improving_with_its_step_and_a_link_to_its_progress() -> None:
    auto = job(served_step=25, train_steps=100, trigger="auto")
    line = model_html(Serving(**{**V8_FIRST.__dict__, "job": auto}))
    assert "v8 (first pass) · accuracy 80.4 %" in line
    assert (
        "improving… (automatic) step 60 of 100 · about 30 s to the verdict on the next checkpoint"
        in line
    )
    assert "data-tab='Train'" in line and "progress ›" in line
    # before its first version serves, and while it waits for a worker: improving all the same
    training = model_html(Serving(**{**V7.__dict__, "job": job(eta_seconds=None, progress=0.02)}))
    assert "improving… Training · step 60 of 100 · estimating…" in training
    queued = model_html(Serving(**{**V7.__dict__, "job": job("queued")}))
    assert "improving… waiting for a worker to take it" in queued


@pytest.mark.parametrize(
    "before,now,said",
    [
        (V7, V8_FIRST, "v8 (first pass) now serves: accuracy 81.2 % → 80.4 %"),
        (V8_FIRST, V8_ALL, "v8 (all 100 steps) now serves: accuracy 80.4 % → 84.0 %"),
        (BASE, V7, "v7 now serves: accuracy 70.0 % → 81.2 %"),  # the base as measured with v7
        (V7, BASE, "The frozen base encoder now serves: accuracy 81.2 % → 70.0 %"),
        (V7, V7, ""),
    ],
)
def test_one_line_says_what_changed_when_another_model_serves(before, now, said) -> None:
    assert what_changed(before, now) == said
    line = model_html(now, said)
    assert (f"✓ {said}" in line) == bool(said)
    assert f"data-model='{now.model}'" in line  # what the page follows (assets/queue_model.js)


def test_a_retrain_that_ended_with_nothing_served_is_said_until_another_starts() -> None:
    """Issue 71 item 6: an automatic retrain whose checkpoints the gate all kept back ended
    and the line said only "Serving v7", as if the labels had not been seen."""
    verdict = "v8 (continuing v7 with 20 new or changed labels) kept back: 86.9 % < 88.3 %"
    kept = Serving(**{**V7.__dict__, "kept": f"{verdict}, v7 keeps serving", "kept_auto": True})
    line = html.unescape(model_html(kept))
    assert f"last retrain (automatic): {verdict}, v7 keeps serving" in line
    assert "improving" not in line
    # a job running again says what it does, not the last one's verdict
    running = Serving(**{**kept.__dict__, "job": job()})
    assert "improving…" in model_html(running) and "last retrain" not in model_html(running)
    assert "last retrain" not in model_html(V7)


def test_only_a_job_that_ended_with_nothing_served_is_kept_back() -> None:
    said = "v8 kept back: 86.9 % < 88.3 %, v7 keeps serving"
    assert job("succeeded", verdict=said).kept_back
    assert not job(
        "succeeded", verdict="v8 measured 88.6 % vs 88.3 %: serves", served_step=100
    ).kept_back
    assert not job("running", verdict=said).kept_back
    assert not job("cancelled", verdict=said).kept_back
