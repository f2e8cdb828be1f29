"""Retrain requests: validate the settings, queue one job per project, follow it, cancel it.

Nothing trains inside a web request: the job runs in a worker (:mod:`app.worker`, which runs
:func:`app.services.retrain.run_retrain`). This module never imports the worker: the entry point
puts the queue's enqueue function on ``AppContext.enqueue``.
"""

from __future__ import annotations

import json
import time
from typing import Any

from app.context import AppContext
from core.multilabel.thresholds import DEFAULT_THRESHOLD, validate_threshold
from core.training import TrainConfig, check_trainable
from storage import jobs
from storage.jobs import JobView
from storage.projects import ensure_writable, get_project
from storage.slots import templates_by_intent
from storage.utterances import list_utterances

# A multi-label head's options, given beside the encoder's settings in a retrain config.
HEAD_KEYS = ("threshold", "tune_thresholds")

# The methods offered in the UI: a label, and the config that selects it.
METHOD_CHOICES: dict[str, dict[str, Any]] = {
    # Short enough for the dropdown at 1280 px; the README and the help line say more.
    "fast · in-batch contrastive (default)": {"method": "fast"},
    "ConvFiT stage 2 · OCL pairs": {"method": "convfit", "loss": "ocl", "negatives": 3},
    "LoRA adapter · small artifact": {"method": "lora"},
    "fast + unlabelled utterances · slower": {"method": "fast", "self_train": 50},
    "fast + templates (slot book)": {"method": "fast", "template_fill": 20, "template_loss": 0.5},
}


def parse_settings(items: list[str]) -> dict[str, Any]:
    """``["epochs=2", "lr=1e-4"]`` → ``{"epochs": 2, "lr": 0.0001}`` (values read as JSON when
    they parse, else kept as text). TrainConfig validates names and ranges afterwards."""
    config: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.strip().partition("=")
        if not key.strip() or not sep:
            raise ValueError(f"Settings are KEY=VALUE, got {item!r}.")
        try:
            config[key.strip()] = json.loads(value)  # numbers, true/false, null, lists
        except json.JSONDecodeError:
            config[key.strip()] = value.strip()
    return config


def split_head_options(config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Take the head's options (``threshold``, ``tune_thresholds``) out of a retrain config and
    validate them. Returns (the encoder's config, the head's options)."""
    rest = {k: v for k, v in config.items() if k not in HEAD_KEYS}
    theta = config.get("threshold", DEFAULT_THRESHOLD)
    if isinstance(theta, bool) or not isinstance(theta, int | float):
        raise ValueError(f"threshold must be a number in (0, 1), got {theta!r}.")
    tune = config.get("tune_thresholds", False)
    if not isinstance(tune, bool):
        raise ValueError(f"tune_thresholds must be true or false, got {tune!r}.")
    return rest, {"threshold": validate_threshold(float(theta)), "tune": tune}


def request_retrain(
    ctx: AppContext,
    project: str,
    config: dict[str, Any] | None = None,
    *,
    user_id: int | None = None,
    enqueue: bool = True,
) -> tuple[JobView, bool]:
    """Validate and queue a retrain. Returns (job, created): a second request while one is queued
    or running returns that job instead of queueing another. ``enqueue=False`` only records the
    job (the caller runs :func:`app.worker.execute_job` itself, as the CLI's inline mode does)."""
    encoder_config, head_options = split_head_options(dict(config or {}))
    cfg = TrainConfig.from_dict(encoder_config)  # raises ValueError for out-of-range settings
    if enqueue and ctx.enqueue is None:
        raise RuntimeError("This process has no training queue (start the app with `serve`).")
    with ctx.db.write() as s:
        p = get_project(s, project)
        ensure_writable(p)
        existing = jobs.active_job(s, p.id)
        if existing is not None:
            return existing, False
        rows = list_utterances(s, p.id)
        check_trainable([r.labels for r in rows if r.split == "train" and r.labels])
        if cfg.stage1 and not any(r.context for r in rows):
            raise ValueError(
                "ConvFiT Stage 1 needs (context, response) pairs: import a CSV or JSONL with a "
                "`context` column first."
            )
        if (cfg.template_fill or cfg.template_loss) and not templates_by_intent(s, p.id):
            raise ValueError(
                "Template filling and the template loss need templates: add slot values and "
                "templates in the Data tab (Slots and templates), or import Rasa YAML with "
                "entity annotations."
            )
        view, created = jobs.create_job(
            s, p.id, {**cfg.to_dict(), "head": head_options}, user_id=user_id
        )
    if enqueue and created:
        assert ctx.enqueue is not None
        try:
            ctx.enqueue(view.id)
        except Exception as exc:
            with ctx.db.write() as s:
                jobs.finish_job(s, view.id, "failed", f"could not queue the job: {exc}")
            raise
    return view, created


def cancel(ctx: AppContext, job_id: int) -> JobView:
    """Ask a job to stop: a queued job is cancelled at once, a running one within seconds."""
    with ctx.db.write() as s:
        return jobs.request_cancel(s, job_id)


def reap_dead(ctx: AppContext) -> int:
    """Fail the running jobs whose worker is gone: silent past ``settings.job_timeout``, or (when
    every worker runs on this host) whose pid is gone. Looking at a job is what notices."""
    alive = jobs.pid_alive if ctx.settings.local_workers else None
    with ctx.db.session() as s:
        return jobs.reap_dead_jobs(s, alive=alive, dead_after=ctx.settings.job_timeout)


def job(ctx: AppContext, job_id: int) -> JobView:
    reap_dead(ctx)
    with ctx.db.session() as s:
        return jobs.get_job(s, job_id)


def latest_job(ctx: AppContext, project: str) -> JobView | None:
    reap_dead(ctx)
    with ctx.db.session() as s:
        return jobs.latest_job(s, get_project(s, project).id)


def wait(ctx: AppContext, job_id: int, timeout: float = 600.0, poll: float = 0.5) -> JobView:
    end = time.monotonic() + timeout
    while True:
        view = job(ctx, job_id)
        if not view.active or time.monotonic() > end:
            return view
        time.sleep(poll)


def time_left(seconds: float | None) -> str:
    """``"about 2 min left"``; ``"estimating…"`` while there is no measurement yet.

    Example:
        >>> time_left(None), time_left(8.4), time_left(130), time_left(5400)
        ('estimating…', 'about 8 s left', 'about 2 min left', 'about 1 h 30 min left')
    """
    if seconds is None:
        return "estimating…"
    s = max(0, round(seconds))
    if s < 60:
        return f"about {s} s left"
    if s < 3600:
        return f"about {round(s / 60)} min left"
    return f"about {s // 3600} h {round(s % 3600 / 60)} min left"


def describe(job: JobView) -> str:
    """A job's state in one line, the same in the Train tab and the CLI: "Training 40 % · about
    2 min left · step 120 of 300 · loss 0.412", "Evaluating 3 encoders · 120 of 1,500 utterances
    · about 10 s left"; outside a measured phase (preparing, saving, registering, finished), its
    message."""
    if job.active and job.phase == "training":
        return f"Training {job.percent} % · {time_left(job.eta_seconds)} · {job.message}"
    if job.active and job.phase == "evaluating":
        return f"{job.message} · {time_left(job.eta_seconds)}"
    return job.message
