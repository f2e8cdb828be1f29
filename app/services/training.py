"""Retrain as a background job: request → queue → worker → artifact → evaluation → promotion gate.

Nothing trains inside a web request. The job row carries status, progress, ETA and a log; the UI
polls it. A failure or a crash leaves the active model unchanged and no referenced artifact
half-written (artifacts are written to a temporary name and renamed when complete).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import select, update

from app.context import AppContext
from app.services import multilabel
from app.services.evaluation import EvalData, evaluate, gate, is_multi_label
from core.encoding.registry import Encoder
from core.training import (
    TrainConfig,
    TrainingCancelled,
    TrainProgress,
    check_trainable,
    load_trained,
    train_encoder,
)
from storage.artifacts import tree_sha256
from storage.datasets import snapshot, snapshot_rows
from storage.errors import StorageError
from storage.projects import ensure_writable, get_project
from storage.tables import ModelVersion, Project, TrainingJob, utcnow
from storage.utterances import list_utterances

logger = logging.getLogger(__name__)

ACTIVE_STATUSES = ("queued", "running")
HEARTBEAT_SECONDS = 5.0
DEAD_AFTER_SECONDS = 60.0
PROMOTION_TOLERANCE = 0.01

# The methods offered in the UI: a label, and the config that selects it.
METHOD_CHOICES: dict[str, dict[str, Any]] = {
    "fast (default: in-batch contrastive, best time-to-accuracy on CPU)": {"method": "fast"},
    "ConvFiT Stage 2 (paper: OCL pairs, n=3)": {"method": "convfit", "loss": "ocl", "negatives": 3},
    "LoRA adapter (small artifact, shared base)": {"method": "lora"},
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


@dataclass(frozen=True)
class JobView:
    id: int
    project_id: int
    status: str
    step: int
    total: int
    loss: float | None
    eta_seconds: float | None
    message: str
    log: str
    model_version_id: int | None
    config: dict[str, Any]

    @property
    def fraction(self) -> float:
        return self.step / self.total if self.total else 0.0

    @property
    def active(self) -> bool:
        return self.status in ACTIVE_STATUSES


def _view(job: TrainingJob) -> JobView:
    return JobView(
        job.id,
        job.project_id,
        job.status,
        job.step,
        job.total,
        job.loss,
        job.eta_seconds,
        job.message,
        job.log,
        job.model_version_id,
        dict(job.config),
    )


def _training_rows(s: Any, project_id: int) -> tuple[list[str], list[tuple[str, ...]]]:
    rows = [r for r in list_utterances(s, project_id, split="train") if r.labels]
    return [r.text for r in rows], [r.labels for r in rows]


def request_retrain(
    ctx: AppContext,
    project: str,
    config: dict[str, Any] | None = None,
    *,
    user_id: int | None = None,
    enqueue: bool = True,
) -> tuple[JobView, bool]:
    """Validate and queue a retrain. Returns (job, created): a second request while one is queued
    or running returns that job instead of queueing another."""
    encoder_config, head_options = multilabel.split_head_options(dict(config or {}))
    cfg = TrainConfig.from_dict(encoder_config)  # raises ValueError for out-of-range settings
    with ctx.db.session() as s:
        p = get_project(s, project)
        ensure_writable(p)
        # One job per project at a time: the row-level check runs inside the write transaction.
        existing = s.scalar(
            select(TrainingJob).where(
                TrainingJob.project_id == p.id, TrainingJob.status.in_(ACTIVE_STATUSES)
            )
        )
        if existing is not None:
            return _view(existing), False
        _, labels = _training_rows(s, p.id)
        check_trainable(labels)  # fewer than 2 intents, a single-example intent, an empty pool
        if cfg.stage1 and not any(r.context for r in list_utterances(s, p.id)):
            raise ValueError(
                "ConvFiT Stage 1 needs (context, response) pairs: import a CSV or JSONL with a "
                "`context` column first."
            )
        job = TrainingJob(
            project_id=p.id,
            user_id=user_id,
            status="queued",
            config={**cfg.to_dict(), "head": head_options},
            message="queued",
        )
        s.add(job)
        s.flush()
        view = _view(job)
    if not enqueue:  # the caller runs execute_job itself (the CLI's inline mode)
        return view, True
    from app.jobs import enqueue_training

    try:
        enqueue_training(ctx.settings, view.id)
    except Exception as exc:
        _finish(ctx, view.id, "failed", f"could not queue the job: {exc}")
        raise
    return view, True


def cancel(ctx: AppContext, job_id: int) -> JobView:
    """Ask a job to stop: a queued job is cancelled at once, a running one within seconds."""
    with ctx.db.session() as s:
        job = s.get(TrainingJob, job_id)
        if job is None:
            raise StorageError(f"No job #{job_id}.")
        if job.status == "queued":
            job.status, job.message, job.finished_at = (
                "cancelled",
                "cancelled before it started",
                utcnow(),
            )
        elif job.status == "running":
            job.cancel_requested = True
            job.message = "cancelling…"
        return _view(job)


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (killed child not yet reaped) still answers kill(0); /proc tells.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][:1] != "Z"
    except OSError:
        return True


def reap_dead_jobs(ctx: AppContext) -> int:
    """Mark running jobs whose worker is gone (dead pid on this host, or no heartbeat for a
    minute) as failed. Called whenever the app looks at jobs. Returns how many."""
    n = 0
    with ctx.db.session() as s:
        for job in s.scalars(select(TrainingJob).where(TrainingJob.status == "running")):
            stale = job.heartbeat_at is None or utcnow() - job.heartbeat_at > timedelta(
                seconds=DEAD_AFTER_SECONDS
            )
            if not _pid_alive(job.worker_pid) or stale:
                job.status = "failed"
                job.message = (
                    "the training worker stopped unexpectedly; the active model is unchanged"
                )
                job.finished_at = utcnow()
                n += 1
    return n


def job(ctx: AppContext, job_id: int) -> JobView:
    reap_dead_jobs(ctx)
    with ctx.db.session() as s:
        j = s.get(TrainingJob, job_id)
        if j is None:
            raise StorageError(f"No job #{job_id}.")
        return _view(j)


def latest_job(ctx: AppContext, project: str) -> JobView | None:
    reap_dead_jobs(ctx)
    with ctx.db.session() as s:
        p = get_project(s, project)
        j = s.scalar(
            select(TrainingJob)
            .where(TrainingJob.project_id == p.id)
            .order_by(TrainingJob.id.desc())
            .limit(1)
        )
        return _view(j) if j is not None else None


def wait(ctx: AppContext, job_id: int, timeout: float = 600.0, poll: float = 0.5) -> JobView:
    end = time.monotonic() + timeout
    while True:
        view = job(ctx, job_id)
        if not view.active or time.monotonic() > end:
            return view
        time.sleep(poll)


# --- the worker side ---------------------------------------------------------------------------


class _JobReporter:
    """Throttled progress writes, a heartbeat thread and cancel polling for one running job."""

    def __init__(self, ctx: AppContext, job_id: int) -> None:
        self.ctx = ctx
        self.job_id = job_id
        self._last_write = 0.0
        self._last_poll = 0.0
        self._cancel = False
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, daemon=True)
        self._beat.start()

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            try:
                with self.ctx.db.session() as s:
                    j = s.get(TrainingJob, self.job_id)
                    if j is not None:
                        j.heartbeat_at = utcnow()
            except Exception:
                logger.exception("heartbeat failed")

    def log(self, line: str) -> None:
        with self.ctx.db.session() as s:
            j = s.get(TrainingJob, self.job_id)
            if j is not None:
                j.log = (j.log + f"[{time.strftime('%H:%M:%S')}] {line}\n")[-20000:]
                j.message = line
                j.heartbeat_at = utcnow()

    def progress(self, p: TrainProgress) -> None:
        now = time.monotonic()
        if now - self._last_write < 1.0 and p.step < p.total:
            return
        self._last_write = now
        with self.ctx.db.session() as s:
            j = s.get(TrainingJob, self.job_id)
            if j is not None:
                j.step, j.total, j.loss, j.eta_seconds = p.step, p.total, float(p.loss), p.eta
                j.message = f"{p.stage}: step {p.step}/{p.total}, loss {p.loss:.4f}"
                j.heartbeat_at = utcnow()

    def should_cancel(self) -> bool:
        now = time.monotonic()
        if now - self._last_poll >= 0.5:
            self._last_poll = now
            with self.ctx.db.session() as s:
                self._cancel = bool(
                    s.scalar(
                        select(TrainingJob.cancel_requested).where(TrainingJob.id == self.job_id)
                    )
                )
        return self._cancel

    def close(self) -> None:
        self._stop.set()


def _finish(
    ctx: AppContext, job_id: int, status: str, message: str, model_version_id: int | None = None
) -> None:
    with ctx.db.session() as s:
        j = s.get(TrainingJob, job_id)
        if j is None:
            return
        j.status, j.message, j.finished_at = status, message, utcnow()
        j.log = (j.log + f"[{time.strftime('%H:%M:%S')}] {message}\n")[-20000:]
        if model_version_id is not None:
            j.model_version_id = model_version_id


def execute_job(ctx: AppContext, job_id: int) -> None:
    """Run one queued training job (in the worker process)."""
    with ctx.db.session() as s:
        # Claim the job atomically: only one worker moves it from queued to running.
        claimed = s.execute(
            update(TrainingJob)
            .where(TrainingJob.id == job_id, TrainingJob.status == "queued")
            .values(
                status="running",
                started_at=utcnow(),
                worker_pid=os.getpid(),
                heartbeat_at=utcnow(),
                message="preparing data",
            )
        ).rowcount  # type: ignore[attr-defined]
        if not claimed:
            return  # cancelled before it started, or taken by another worker
        j = s.get(TrainingJob, job_id)
        assert j is not None
        project_id, config = j.project_id, dict(j.config)
    head_options = dict(config.pop("head", None) or {})
    reporter = _JobReporter(ctx, job_id)
    try:
        _train_and_register(
            ctx, reporter, job_id, project_id, TrainConfig.from_dict(config), head_options
        )
    except TrainingCancelled:
        _finish(ctx, job_id, "cancelled", "cancelled; the active model is unchanged")
    except Exception as exc:
        logger.exception("job %s failed", job_id)
        _finish(
            ctx, job_id, "failed", f"{type(exc).__name__}: {exc}; the active model is unchanged"
        )
    finally:
        reporter.close()


def _train_and_register(
    ctx: AppContext,
    reporter: _JobReporter,
    job_id: int,
    project_id: int,
    cfg: TrainConfig,
    head_options: dict[str, Any],
) -> None:
    with ctx.db.session() as s:
        dv = snapshot(s, project_id)
        rows = snapshot_rows(dv)
        project = s.get(Project, project_id)
        assert project is not None
        base = project.base_encoder
        active_id = project.active_model_version_id
        active = s.get(ModelVersion, active_id) if active_id else None
        if active is not None:
            s.expunge(active)
        dv_id, dv_hash = dv.id, dv.content_hash
        # ConvFiT Stage 1 adapts on (context, response) pairs: imported rows with a `context`
        context_pairs = (
            [(r.context, r.text) for r in list_utterances(s, project_id) if r.context]
            if cfg.stage1
            else None
        )
    train = [r for r in rows if r.split == "train" and r.labels]
    test = [r for r in rows if r.split == "test" and r.labels]
    data = EvalData(
        [r.text for r in train],
        [r.labels for r in train],
        [r.text for r in test],
        [r.labels for r in test],
    )
    reporter.log(f"training {cfg.method} on {len(train)} utterances (dataset {dv_hash[:12]})")
    started = time.monotonic()
    trained = train_encoder(
        base,
        data.train_texts,
        data.train_labels,
        cfg,
        progress=reporter.progress,
        should_cancel=reporter.should_cancel,
        device=ctx.device,
        context_pairs=context_pairs,
    )
    train_seconds = time.monotonic() - started
    rel = f"projects/{project_id}/models/job{job_id}-{uuid.uuid4().hex[:8]}"
    reporter.log("saving the model")
    multi = is_multi_label(data.train_labels)
    if multi:  # "no intent" rows (train/test, no labels) teach the head what is none of them
        data = EvalData(
            [r.text for r in rows if r.split == "train"],
            [r.labels for r in rows if r.split == "train"],
            [r.text for r in rows if r.split == "test"],
            [r.labels for r in rows if r.split == "test"],
        )
    with ctx.artifacts.writing(rel) as tmp:
        trained.save(tmp)
        if multi:  # the head is part of the version: written before the folder is renamed
            reporter.log(f"training the multi-label head and evaluating on {data.split}")
            new_enc = load_trained(tmp, device=ctx.device)
            new_metrics, head = multilabel.evaluate(new_enc, data, ctx.cache, **head_options)
            head.save(tmp / multilabel.HEAD_DIR)
    path = ctx.artifacts.path(rel)
    try:
        sha, size = tree_sha256(path)
        reporter.log(f"evaluating on {data.split}")

        def score(encoder: Encoder) -> dict[str, Any]:
            if multi:
                return multilabel.evaluate(encoder, data, ctx.cache, **head_options)[0]
            return evaluate(encoder, data, ctx.cache)

        if not multi:
            new_metrics = score(load_trained(path, device=ctx.device))
        base_metrics = score(ctx.base_encoder(base))
        ref_metrics = base_metrics if active is None else score(ctx.encoder_for_version(active))
        passed, why = gate(new_metrics, ref_metrics, PROMOTION_TOLERANCE)
        metrics = {
            **new_metrics,
            "base": base_metrics,
            "reference": {
                "version": active.id if active else None,
                **{k: ref_metrics[k] for k in ("accuracy", "macro_f1")},
            },
            "gate": {"passed": passed, "reason": why, "tolerance": PROMOTION_TOLERANCE},
            "train_seconds": round(train_seconds, 1),
            "steps": trained.stats.get("steps"),
        }
        with ctx.db.session() as s:
            mv = ModelVersion(
                project_id=project_id,
                dataset_version_id=dv_id,
                method=cfg.method,
                base_encoder=base,
                config=cfg.to_dict(),
                metrics=metrics,
                artifact_path=rel,
                artifact_sha256=sha,
                artifact_size=size,
                note=why,
            )
            s.add(mv)
            s.flush()
            if passed:
                p = s.get(Project, project_id)
                assert p is not None
                p.active_model_version_id = mv.id
            mv_id = mv.id
    except BaseException:
        ctx.artifacts.remove(rel)  # never leave an unreferenced artifact behind
        raise
    acc, base_acc = new_metrics["accuracy"], base_metrics["accuracy"]
    _finish(
        ctx,
        job_id,
        "succeeded",
        f"v{mv_id}: accuracy {acc:.3f} (frozen {base_acc:.3f}) in {train_seconds:.0f}s. {why}",
        mv_id,
    )
