"""The retrain pipeline a worker runs for one job: snapshot the data → train → save the artifact →
evaluate (new, frozen base, active) → promotion gate → register the version.

Progress has two measured phases, each with its own count and ETA: ``training`` (optimiser
steps) and ``evaluating`` (the utterances the three encoders still have to encode: the frozen
base's and the active version's vectors mostly come from the embedding cache, so the new model's
are most of the work). The job reaches 100 % only when the version is registered.

A failure or a crash leaves the active model unchanged and no referenced artifact half-written:
the artifact is written under a temporary name and renamed when complete, and removed again when
anything after it fails.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, replace
from typing import Any, Protocol, cast

from app.context import AppContext, as_encoded
from app.project_settings import encodes_context
from app.services.evaluation import evaluate_version, evaluation_key, evaluation_memo, gate
from app.services.int8 import (
    INT8_DIR,
    INT8_OFF,
    export_version_int8,
    load_int8,
    served_metrics,
)
from core.encoding.registry import Encoder
from core.evaluation import EvalData
from core.evaluation.version_metrics import FP32, INT8, VersionMetrics
from core.multilabel.head import HEAD_DIR, MultiLabelHead
from core.multilabel.rule import is_multilabel
from core.retrieval.factory import PredictorFactory
from core.training import (
    Eta,
    TrainConfig,
    TrainingCancelled,
    TrainProgress,
    train_encoder,
    trainable,
)
from storage import jobs
from storage.artifacts import tree_sha256
from storage.datasets import snapshot, snapshot_rows
from storage.projects import get_project
from storage.versions import NewVersion, active_version, register_version

PROMOTION_TOLERANCE = 0.01


@dataclass(frozen=True)
class EvalProgress:
    """The evaluation phase: utterances encoded of those the ``encoders`` still had to encode,
    and the seconds left (None until measured)."""

    done: int
    total: int
    encoders: int
    eta: float | None


class Reporter(Protocol):
    """Where a running job reports (the worker's job reporter)."""

    def log(self, line: str, *, phase: str | None = None) -> None: ...

    def progress(self, p: TrainProgress) -> None: ...

    def evaluation(self, p: EvalProgress) -> None: ...

    def should_cancel(self) -> bool: ...


Scored = tuple[VersionMetrics, MultiLabelHead | None]


class Evaluation:
    """Scores several encoders on one data set as one measured phase: the count is what the
    embedding cache does not hold yet, known before the first one is encoded. An encoder whose
    evaluation on these rows is already measured (``known``: factory and its options, read from
    :func:`app.services.evaluation.evaluation_memo`) is not counted: it is read, not measured."""

    def __init__(
        self,
        ctx: AppContext,
        reporter: Reporter,
        data: EvalData,
        factories: list[PredictorFactory],
        known: list[tuple[PredictorFactory, dict[str, Any]]] = (),  # type: ignore[assignment]
    ) -> None:
        self.ctx, self.reporter, self.data = ctx, reporter, data
        self.memo = evaluation_memo(ctx)
        texts = [*data.train_texts, *data.test_texts]
        remembered = {
            _fingerprint(f)
            for f, options in known
            if self.memo.get(evaluation_key(f, data, **_memo_options(options))) is not None
        }
        distinct = {_fingerprint(f): cast(Encoder, f.encoder) for f in factories}
        self.encoders = len(distinct)
        self.total = sum(
            len(ctx.cache.missing(e, texts)) for k, e in distinct.items() if k not in remembered
        )
        self.done = 0
        self.eta = Eta(self.total)
        self.scored: dict[str, Scored] = {}

    def add(self, factory: PredictorFactory) -> None:
        """Count one more encoder to score (the int8 copy, known once exported): its texts that
        the embedding cache does not hold yet."""
        texts = [*self.data.train_texts, *self.data.test_texts]
        missing = len(self.ctx.cache.missing(cast(Encoder, factory.encoder), texts))
        self.encoders += 1
        self.total += missing
        self.eta.total = self.total

    def _report(self, done: int) -> None:
        if self.reporter.should_cancel():
            raise TrainingCancelled(f"cancelled while evaluating ({done} of {self.total})")
        left = self.eta.update(done)
        self.reporter.evaluation(EvalProgress(done, self.total, self.encoders, left))

    def start(self) -> None:
        self._report(0)

    def score(
        self, factory: PredictorFactory, *, remembered: bool = False, **options: Any
    ) -> Scored:
        """Metrics (and head) of ``factory``'s Predictors (:func:`evaluate_version`); an
        encoder already scored is not scored again. ``remembered``: its metrics may come from
        the evaluations already measured (its head is then None), and are kept there."""
        key = _fingerprint(factory)
        if key in self.scored:
            return self.scored[key]
        offset = self.done

        def progress(done: int, _total: int) -> None:
            self.done = offset + done
            self._report(self.done)

        result = evaluate_version(
            factory,
            self.data,
            self.ctx.cache,
            progress=progress,
            memo=self.memo if remembered else None,
            **options,
        )
        self.scored[key] = result
        return result


def _fingerprint(factory: PredictorFactory) -> str:
    return str(cast(Encoder, factory.encoder).fingerprint)


def _memo_options(options: dict[str, Any]) -> dict[str, Any]:
    return {"multi_label": bool(options.get("multi_label")), "head": options.get("head")}


def run_retrain(
    ctx: AppContext,
    reporter: Reporter,
    job_id: int,
    project_id: int,
    cfg: TrainConfig,
    head_options: dict[str, Any],
) -> tuple[int, str]:
    """Train, evaluate and register a version. Returns (version id, the job's closing message)."""
    with ctx.db.write() as s:
        dv = snapshot(s, project_id)
        project = get_project(s, project_id)
        base, use_context = project.base_encoder, encodes_context(project.settings)
        settings = dict(project.settings or {})
        # a project that encodes context trains and evaluates on what its pool will encode
        rows = as_encoded(snapshot_rows(dv), project.settings)
        active = active_version(s, project_id)
        dv_id, dv_hash = dv.id, dv.content_hash
    train = EvalData.from_rows(rows)  # labelled rows only: what the encoder is tuned on
    multi = is_multilabel(train.train_labels)
    # "no intent" rows (train/test, no labels) teach a multi-label head what is none of them
    data = EvalData.from_rows(rows, with_unlabelled=multi)
    # an intent with fewer than 2 examples is left out of training only (issue 43, hole 5)
    fit = trainable(train.train_texts, train.train_labels)
    if reporter.should_cancel():
        raise TrainingCancelled("cancelled while preparing the data")
    reporter.log(
        f"training {cfg.method} on {len(fit.texts)} utterances (dataset {dv_hash[:12]})",
        phase="training",
    )
    if fit.left_out:
        reporter.log(fit.note())
    started = time.monotonic()
    trained = train_encoder(
        base,
        fit.texts,
        fit.labels,
        cfg,
        progress=reporter.progress,
        should_cancel=reporter.should_cancel,
        device=ctx.device,
    )
    train_seconds = time.monotonic() - started
    rel = f"projects/{project_id}/models/job{job_id}-{uuid.uuid4().hex[:8]}"
    reporter.log("saving the model", phase="saving")
    options: dict[str, Any] = {"multi_label": multi, "head": head_options}

    with ctx.artifacts.writing(rel) as tmp:
        trained.save(tmp)
        # the model in memory, not read back: its weights are the ones just written (issue 44)
        new_encoder = trained.saved_encoder(tmp)
        # each encoder scored by the Predictor it would serve: the project's anchors, rule and
        # k, from the one factory
        new_factory = ctx.predictor_factory(project_id, new_encoder)
        base_factory = ctx.predictor_factory(project_id, ctx.base_encoder(base))
        # the active version as it serves (its int8 copy when that serves): the gate compares
        # what serves with what would serve
        ref_factory = (
            base_factory
            if active is None
            else ctx.serving_factory(project_id, active, base, settings)
        )
        # the frozen base and the active version serve a head fitted with the default options
        # (AppContext.space_head); measured on these rows before, they are read, not measured
        base_options: dict[str, Any] = {"multi_label": multi, "head": {}}
        ref_options: dict[str, Any] = {
            "multi_label": multi,
            "head": head_options if ref_factory.head is not None else {},
        }
        evaluation = Evaluation(
            ctx,
            reporter,
            data,
            [new_factory, base_factory, ref_factory],
            known=[(base_factory, base_options), (ref_factory, ref_options)],
        )
        reporter.log(
            f"evaluating {evaluation.encoders} encoders on {data.split}: "
            f"{evaluation.total:,} utterances to encode"
        )
        started = time.monotonic()
        evaluation.start()
        new_metrics, head = evaluation.score(new_factory, **options)
        if head is not None:  # the head is part of the version: written before the rename
            head.save(tmp / HEAD_DIR)
        # what a live evaluation of the version on these rows (the report's) will read
        evaluation.memo.put(
            evaluation_key(new_factory, data, **_memo_options(options)), new_metrics
        )
        int8: dict[str, Any] = {"passed": False, "reason": INT8_OFF}
        if ctx.settings.int8:
            reporter.log("checking the int8 encoder's parity")
            int8 = export_version_int8(
                new_encoder, data, tmp / INT8_DIR, cached=ctx.cache.encode, multi_label=multi
            )
        int8_metrics: VersionMetrics | None = None
        if int8.get("passed"):
            # the copy that will serve is measured on the same rows, as it will answer
            int8_factory = ctx.predictor_factory(project_id, load_int8(tmp / INT8_DIR))
            evaluation.add(int8_factory)
            int8_metrics, _ = evaluation.score(int8_factory, **options)
            evaluation.memo.put(
                evaluation_key(int8_factory, data, **_memo_options(options)), int8_metrics
            )
    path = ctx.artifacts.path(rel)
    try:
        sha, size = tree_sha256(path)
        base_metrics, _ = evaluation.score(base_factory, remembered=True, **base_options)
        ref_metrics, _ = evaluation.score(ref_factory, remembered=True, **ref_options)
        evaluate_seconds = time.monotonic() - started
        reporter.log("registering the version", phase="registering")
        # the headline is the int8 copy's when it passed parity (it serves by default), with
        # the fp32 encoder's beside it, labelled; the gate compares what this project serves
        recorded = (
            replace(new_metrics, encoder=FP32)
            if int8_metrics is None
            else replace(int8_metrics, encoder=INT8, fp32=replace(new_metrics, encoder=FP32))
        )
        served = served_metrics(replace(recorded, int8=int8), settings)
        passed, why = gate(served, ref_metrics, PROMOTION_TOLERANCE)
        if int8_metrics is not None:
            why += f" Measured with the {served.measured_with} encoder that serves it."
        metrics = replace(
            recorded,
            base=base_metrics,
            reference={
                "version": active.id if active else None,
                "accuracy": ref_metrics.accuracy,
                "macro_f1": ref_metrics.macro_f1,
            },
            gate={"passed": passed, "reason": why, "tolerance": PROMOTION_TOLERANCE},
            int8=int8,
            train_seconds=round(train_seconds, 1),
            evaluate_seconds=round(evaluate_seconds, 1),
            extra={
                **recorded.extra,
                "steps": trained.stats.get("steps"),
                **({"encode_context": True} if use_context else {}),
            },
        )
        new = NewVersion(
            project_id=project_id,
            dataset_version_id=dv_id,
            method=cfg.method,
            base_encoder=base,
            config=cfg.to_dict(),
            metrics=metrics.to_dict(),
            artifact_path=rel,
            artifact_sha256=sha,
            artifact_size=size,
            note=why,
        )
        with ctx.db.write() as s:
            jobs.require_running(s, job_id)  # cancelled or reaped: nothing it made may count
            mv_id = register_version(s, new, activate=passed)
            jobs.registered(s, job_id, mv_id)
    except BaseException:
        ctx.artifacts.remove(rel)  # never leave an unreferenced artifact behind
        raise
    acc, base_acc = served.accuracy or 0.0, base_metrics.accuracy or 0.0
    left_out = f" {fit.note()}." if fit.left_out else ""
    return mv_id, (
        f"v{mv_id}: accuracy {acc:.3f} (frozen {base_acc:.3f}) in {train_seconds:.0f}s. {why}"
        f"{left_out}"
    )
