"""The retrain pipeline a worker runs for one job: snapshot the data → train → save the artifact →
evaluate (new, frozen base, active) → promotion gate → register the version.

A failure or a crash leaves the active model unchanged and no referenced artifact half-written:
the artifact is written under a temporary name and renamed when complete, and removed again when
anything after it fails.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Protocol

from app.context import AppContext
from app.services.evaluation import evaluate_version, gate
from core.evaluation import EvalData
from core.multilabel.head import HEAD_DIR
from core.multilabel.rule import is_multilabel
from core.training import TrainConfig, TrainProgress, load_trained, train_encoder
from storage.artifacts import tree_sha256
from storage.datasets import snapshot, snapshot_rows
from storage.projects import get_project
from storage.utterances import list_utterances
from storage.versions import NewVersion, active_version, register_version

PROMOTION_TOLERANCE = 0.01


class Reporter(Protocol):
    """Where a running job reports (the worker's job reporter)."""

    def log(self, line: str) -> None: ...

    def progress(self, p: TrainProgress) -> None: ...

    def should_cancel(self) -> bool: ...


def run_retrain(
    ctx: AppContext,
    reporter: Reporter,
    job_id: int,
    project_id: int,
    cfg: TrainConfig,
    head_options: dict[str, Any],
) -> tuple[int, str]:
    """Train, evaluate and register a version. Returns (version id, the job's closing message)."""
    with ctx.db.session() as s:
        dv = snapshot(s, project_id)
        rows = snapshot_rows(dv)
        base = get_project(s, project_id).base_encoder
        active = active_version(s, project_id)
        dv_id, dv_hash = dv.id, dv.content_hash
        # ConvFiT Stage 1 adapts on (context, response) pairs: imported rows with a `context`
        context_pairs = (
            [(r.context, r.text) for r in list_utterances(s, project_id) if r.context]
            if cfg.stage1
            else None
        )
    train = EvalData.from_rows(rows)  # labelled rows only: what the encoder is tuned on
    multi = is_multilabel(train.train_labels)
    # "no intent" rows (train/test, no labels) teach a multi-label head what is none of them
    data = EvalData.from_rows(rows, with_unlabelled=multi)
    reporter.log(
        f"training {cfg.method} on {len(train.train_texts)} utterances (dataset {dv_hash[:12]})"
    )
    started = time.monotonic()
    trained = train_encoder(
        base,
        train.train_texts,
        train.train_labels,
        cfg,
        progress=reporter.progress,
        should_cancel=reporter.should_cancel,
        device=ctx.device,
        context_pairs=context_pairs,
    )
    train_seconds = time.monotonic() - started
    rel = f"projects/{project_id}/models/job{job_id}-{uuid.uuid4().hex[:8]}"
    reporter.log("saving the model")

    def score(encoder: Any) -> tuple[dict[str, Any], Any]:
        return evaluate_version(encoder, data, ctx.cache, multi_label=multi, head=head_options)

    with ctx.artifacts.writing(rel) as tmp:
        trained.save(tmp)
        reporter.log(f"evaluating on {data.split}")
        new_metrics, head = score(load_trained(tmp, device=ctx.device))
        if head is not None:  # the head is part of the version: written before the rename
            head.save(tmp / HEAD_DIR)
    path = ctx.artifacts.path(rel)
    try:
        sha, size = tree_sha256(path)
        base_metrics, _ = score(ctx.base_encoder(base))
        ref_metrics = base_metrics if active is None else score(ctx.encoder_for_version(active))[0]
        passed, why = gate(new_metrics, ref_metrics, PROMOTION_TOLERANCE)
        metrics = {
            **new_metrics,
            "base": base_metrics,
            "reference": {
                "version": active.id if active else None,
                **{k: ref_metrics.get(k) for k in ("accuracy", "macro_f1")},
            },
            "gate": {"passed": passed, "reason": why, "tolerance": PROMOTION_TOLERANCE},
            "train_seconds": round(train_seconds, 1),
            "steps": trained.stats.get("steps"),
        }
        new = NewVersion(
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
        with ctx.db.session() as s:
            mv_id = register_version(s, new, activate=passed)
    except BaseException:
        ctx.artifacts.remove(rel)  # never leave an unreferenced artifact behind
        raise
    acc, base_acc = new_metrics["accuracy"], base_metrics["accuracy"]
    return mv_id, (
        f"v{mv_id}: accuracy {acc:.3f} (frozen {base_acc:.3f}) in {train_seconds:.0f}s. {why}"
    )
