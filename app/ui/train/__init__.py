"""The Train tab, one module per section: Retrain (queue a job, live progress, Cancel), Versions
(history, activate / roll back, compare), Evaluation (F1, confusion with click-through) and
Export & share (report, bundle, open a bundle).

Callbacks are module-level functions of the app context and plain values; they only call
:mod:`app.services`.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import gradio as gr

from app.access import ProjectHandle
from app.services.models import calibration, encoders
from app.services.training import serving_now
from app.serving.live import LivePools
from app.serving.state import ServingState
from app.serving.training_queue import TrainingQueue
from app.ui.common import attempt, bind, ok, problem
from app.ui.queue_model import POLL_S as serving_now_poll_s
from app.ui.train import auto_switch
from app.ui.train.evaluation import build_evaluation_section
from app.ui.train.export import build_export_section
from app.ui.train.retrain import build_retrain_section, poll, progress_html, shown_job
from app.ui.train.versions import VersionsSection, build_versions_section, versions_of

__all__ = ["build_train_tab", "progress_html", "refresh", "tick"]


def tick(
    training: TrainingQueue,
    live: LivePools,
    p: ProjectHandle | None,
    jid: int | None,
    message: str | None,
) -> tuple[Any, ...]:
    """The timer's refresh: the job panel, and the history and the automatic retrain's line
    once the job has ended (it said "a retrain is under way" after the job ended). The Retrain
    click's "Job #N queued" line says "running" once a worker has taken the job (the panel names
    its phase), and is cleared once it has ended (the panel says how). ``message`` is None
    before any click (a job the page follows without one: an automatic retrain)."""
    message = message or ""
    view = shown_job(training, p, jid)
    out = poll(training, p, jid, view)
    said: Any = gr.update()
    if view is not None and f"Job #{view.id} " in (message or ""):
        if view.status == "running" and "queued" in message:
            said = ok(
                f"Job #{view.id} is running: its phase and time left are below.", notify=False
            )
        elif not view.active:
            said = ""
    if out[2]["active"]:  # only the job panel changes; every other output is left as it is
        return (*out, *(gr.update() for _ in fields(VersionsSection)), said, gr.update())
    # the job ended: show its version, and what counts towards the next automatic retrain
    return (*out, *versions_of(training, p), said, auto_switch.shown(live, p)[2])


def refresh(training: TrainingQueue, live: LivePools, p: ProjectHandle | None) -> tuple[Any, ...]:
    """The tab as the project is now: its job, its versions, its automatic retrain's switch."""
    return (*poll(training, p, None), *versions_of(training, p), *auto_switch.shown(live, p))


def encoder_line(live: LivePools, p: ProjectHandle | None) -> str:
    """Which encoder the project trains and serves, why on this device, and what switching
    would cost here (:func:`app.services.models.encoders.encoder_view`); then the same for the
    out-of-scope calibration a retrain runs (:func:`app.services.models.calibration.calibration_line`)."""
    if p is None:
        return ""
    view, err = attempt(
        lambda: encoders.encoder_view(live.db, p, live.models.budget, live.models.artifacts)
    )
    if view is None:
        return problem(err or "Could not read the encoder.")
    line, err = attempt(lambda: calibration.calibration_line(live, p, live.models.budget))
    said = line if line is not None else problem(err or "Could not read the calibration.")
    # the headline on screen; why, switching and the calibration folded (1280x720: issue 75)
    return (
        f"**Encoder:** `{view.name}`, {view.description}. {view.serving}\n\n"
        "<details><summary>Why this encoder, what switching costs, out-of-scope calibration"
        f"</summary>\n\n**Why:** {view.why}  \n**Switching:** {view.switch}  \n"
        f"**Out-of-scope calibration:** {said}\n\n</details>"
    )


def follow_serving(
    training: TrainingQueue, live: LivePools, p: ProjectHandle | None, seen: tuple[Any, ...] | None
) -> tuple[Any, ...]:
    """The timer's look at what serves (one cheap read, as the Label tab's model line): when it
    moved, the encoder line again, however another model came to serve (a retrain's version, its
    better checkpoint, a version made active elsewhere: it named v1 after v3 served, issue 75
    item 6), and the job panel, followed from then on (an automatic retrain queued while the tab
    is open: the demo's first, issue 75 item 2)."""
    unchanged = (gr.skip(), seen, *(gr.skip() for _ in range(4)))
    if p is None:
        return unchanged
    stamp, err = attempt(lambda: serving_now.stamp(live.db, p))
    if err or stamp is None or seen == (p.id, *stamp):
        return unchanged
    return (encoder_line(live, p), (p.id, *stamp), *poll(training, p, None))


def build_train_tab(
    serving_state: ServingState, project: gr.Dropdown, user: gr.State
) -> dict[str, Any]:
    """Lay out the Train tab's sections and bind its events. Returns its refresh hook."""
    # One section at a time, each fitting a 1280x720 screen (it was one long scroll).
    with gr.Tabs(elem_id="train-sections"):
        with gr.Tab("Retrain"):
            retrain = build_retrain_section(
                serving_state.training, project, user, serving_state.live
            )
            encoder = gr.Markdown(elem_id="train-encoder")
        with gr.Tab("Versions"):
            versions = build_versions_section(
                serving_state.factories, serving_state.training, project, retrain.message
            )
        with gr.Tab("Evaluation"):
            build_evaluation_section(serving_state.factories, project)
        with gr.Tab("Export & share"):
            build_export_section(serving_state, project)
    outputs = [*retrain.job_outputs, *versions.outputs]
    follow = (
        bind(tick, serving_state.training, serving_state.live),
        [project, retrain.job_id, retrain.message],
        [*outputs, retrain.message, retrain.switch.line],
    )
    # a job that ended before the first tick (a small project, a warm worker) is still shown
    # ended: its version in the history, the "queued" line cleared (the timer stays off)
    retrain.started.then(*follow, api_visibility="private", show_progress="hidden")
    retrain.timer.tick(*follow, api_visibility="private", show_progress="hidden")
    # the encoder line follows the project and the model that serves it (a version made
    # active, its int8 copy switched in)
    for changed in (project.change, versions.serving.change):
        changed(
            bind(encoder_line, serving_state.live),
            [project],
            [encoder],
            api_visibility="private",
            show_progress="hidden",
        )
    # ... and whatever else made another model serve (a checkpoint, another page's activation)
    seen = gr.State(None)
    serving_timer = gr.Timer(serving_now_poll_s)
    serving_timer.tick(
        bind(follow_serving, serving_state.training, serving_state.live),
        [project, seen],
        [encoder, seen, *retrain.job_outputs],
        api_visibility="private",
        show_progress="hidden",
    )
    # the line that says which model serves: it changes when a retrain ends or a version is
    # made active (the header's summary follows it)
    refreshed = [*outputs, *retrain.switch.outputs]
    return {
        "refresh": (
            bind(refresh, serving_state.training, serving_state.live),
            [project],
            refreshed,
        ),
        "serving": versions.serving,
    }
