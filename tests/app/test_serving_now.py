"""The Label tab's model line (issue 65 item 8): which version serves and its accuracy,
"improving…" with a link to the Train tab while a retrain (an automatic one) runs, and one line
of what changed when another model starts serving, before → after."""

from __future__ import annotations

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
