"""Train tab, Retrain section: method and settings, Retrain and Cancel, the live progress bar and
the training log. Callbacks are plain functions of the app context and the inputs' values."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import gradio as gr

from app.access import ProjectHandle
from app.access.actions import TRAIN
from app.services.projects import first_retrain
from app.services.training import retrain_jobs as train_svc
from app.serving.live import LivePools
from app.serving.training_queue import TrainingQueue
from app.ui.common import attempt, bind, ok, problem
from app.ui.guard import guarded
from app.ui.train.auto_switch import AutoSwitch, build_auto_switch
from storage.job_view import JobView

HELP = (
    "**Retrain** tunes the encoder on your `train` labels in the background and measures it on "
    "the `test` split; a new version serves only when it is at least as good (within 1 point)."
)


def progress_html(job: JobView | None, why: str = "") -> str:
    """The job's one progress bar (the whole job, every phase: it never goes back, and reaches
    100 % once the version is registered) and its status line: the phase running now, its count
    and the time left (user text escaped). ``why``: why an automatic job runs
    (:func:`app.services.projects.first_retrain.why`)."""
    if job is None:
        return "<div class='job-status'>No training yet.</div>"
    who = (
        f" (automatic, {html.escape(why or first_retrain.AFTER_LABELS)})"
        if job.trigger == "auto"
        else ""
    )
    # an anytime retrain: what serves already, said where the eye goes first
    serving = train_svc.serving_words(job) if job.active else ""
    state = (
        job.status + (f" — {serving}" if serving else "") + (", improving" if job.improving else "")
    )
    return (
        f"<div class='job-status job-{html.escape(job.status)}' id='job-{job.id}'>"
        f"<div class='bar'><div class='fill' style='width:{job.percent}%'></div></div>"
        f"<b>Job #{job.id}{who}: {html.escape(state)}</b> · {job.percent}%<br>"
        f"{html.escape(train_svc.describe(job))}</div>"
    )


def shown_job(training: TrainingQueue, p: ProjectHandle | None, jid: int | None) -> JobView | None:
    """The job the panel shows: the project's latest, unless it is older than job ``jid``."""
    job = train_svc.latest_job(training, p) if p is not None else None
    return job if job is not None and (jid is None or job.id >= jid) else None


def poll(
    training: TrainingQueue, p: ProjectHandle | None, jid: int | None, view: Any = False
) -> tuple[Any, ...]:
    """Refresh the job panel; keep the timer running only while a job is active. ``view``: the
    job already read (:func:`shown_job`), else it is read here."""
    if view is False:
        view = shown_job(training, p, jid)
    active = view is not None and view.active
    why = first_retrain.why(training.db, p.name, view) if view is not None and p else ""
    return (
        progress_html(view, why),
        view.log if view is not None else "",
        gr.update(active=active),
        view.id if view is not None else None,
    )


def start(
    training: TrainingQueue, p: ProjectHandle | None, meth: str, extra: str, who: str
) -> tuple[Any, ...]:
    """Queue a retrain with the chosen method and ``key=value`` settings."""
    if p is None:
        return problem("Pick a project first."), None, gr.update(active=False)

    def go() -> tuple[JobView, bool]:
        config = {**train_svc.METHOD_CHOICES[meth], **train_svc.parse_settings(extra or "")}
        return train_svc.request_retrain(training, p, config)

    res, err = attempt(go)
    if err or res is None:
        return problem(err or "could not start"), None, gr.update(active=False)
    job, created = res
    msg = (
        ok(f"Job #{job.id} queued: training runs in the background.")  # until a worker takes it
        if created
        else ok(f"Job #{job.id} is already {job.status}; showing it.")
    )
    return msg, job.id, gr.update(active=True)


def method_info(choice: str) -> str:
    """The line under the method that says what it is (ConvFiT Stage 2: ...)."""
    return train_svc.method_line(choice)


def stop(training: TrainingQueue, jid: int | None, p: ProjectHandle | None) -> str:
    """Cancel the shown job (or the project's active one)."""
    if jid is None and p is not None:
        latest, err = attempt(lambda: train_svc.latest_job(training, p))
        if err:
            return problem(err)
        jid = latest.id if latest is not None and latest.active else None
    if jid is None:
        return problem("No training job is running.")
    job, err = attempt(lambda: train_svc.cancel(training.db, jid))
    if err or job is None:
        return problem(err or "")
    return ok(f"Job #{job.id}: {job.message}")


@dataclass
class RetrainSection:
    progress: gr.HTML
    log: gr.Textbox
    timer: gr.Timer
    job_id: gr.State
    message: gr.Markdown
    switch: AutoSwitch  # the automatic retrain's switch and threshold (auto_switch.py)
    started: Any = None  # the Retrain click's event, followed by the tab's first tick

    @property
    def job_outputs(self) -> list[Any]:
        return [self.progress, self.log, self.timer, self.job_id]


def build_retrain_section(
    training: TrainingQueue, project: gr.Dropdown, user: gr.State, live: LivePools
) -> RetrainSection:
    gr.Markdown(HELP)
    default = next(iter(train_svc.METHOD_CHOICES))
    with gr.Row(equal_height=True):
        method = gr.Dropdown(
            list(train_svc.METHOD_CHOICES),
            value=default,
            label="Method",
            scale=3,
            elem_id="train-method",
        )
        settings = gr.Textbox(
            label="Advanced settings (optional)",
            placeholder="e.g. epochs=2, lr=5e-5, seed=1",
            scale=3,
            max_lines=1,
        )
        retrain = gr.Button("Retrain", variant="primary", scale=1, elem_id="retrain")
        cancel = gr.Button("Cancel", scale=1, elem_id="cancel-training")
    line = gr.Markdown(method_info(default), elem_id="method-line")
    switch = build_auto_switch(live, project)  # where the retrains show (issue 75 item 1)
    section = RetrainSection(
        progress=gr.HTML(progress_html(None), elem_id="job-progress"),
        message=gr.Markdown(elem_id="train-message"),
        log=gr.Textbox(render=False, lines=8, max_lines=20, show_label=False, elem_id="job-log"),
        timer=gr.Timer(1.0, active=False),
        job_id=gr.State(None),
        switch=switch,
    )
    with gr.Accordion("Training log", open=False):
        section.log.render()
    method.input(method_info, [method], [line], api_visibility="private")
    # the Train tab follows the queued job with its timer's tick, first at once (app.ui.train)
    section.started = retrain.click(
        guarded(TRAIN, outputs=3)(bind(start, training)),
        [project, method, settings, user],
        [section.message, section.job_id, section.timer],
        api_name="retrain",
    )
    cancel.click(
        guarded(TRAIN)(bind(stop, training)),
        [section.job_id, project],
        [section.message],
        api_name="cancel_training",
    )
    return section
