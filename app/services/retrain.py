"""The retrain pipeline a worker runs for one job: snapshot the data → train → save the artifact →
evaluate (new, frozen base, active) → int8 copy (its parity, then its own measurement) →
promotion gate → register the version.

Progress is one share of the whole job (:class:`app.services.job_plan.JobPlan`, planned before
training from what each phase has to do), through its phases in order: ``training`` (counted in
optimiser steps), ``saving``, ``evaluating`` (counted in the utterances the three encoders still
have to encode: the frozen base's and the active version's vectors mostly come from the
embedding cache, so the new model's are most of the work), ``int8``, ``registering``. The job
reaches 100 % only when the version is registered.

A failure or a crash leaves the active model unchanged and no referenced artifact half-written:
the artifact is written under a temporary name and renamed when complete, and removed again when
anything after it fails.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, replace
from typing import Any, Protocol, cast

from app.project_settings import as_encoded, encodes_context
from app.services.evaluation import evaluate_version, evaluation_key, evaluation_memo, gate
from app.services.int8 import INT8_OFF, PARITY_QUERIES, export_version_int8, parity_split
from app.services.job_plan import JobPlan
from app.serving.context import AppContext
from app.serving.factories import FactoryBuilder
from app.serving.int8 import INT8_DIR, load_int8, served_metrics
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
    planned_steps,
    train_encoder,
    trainable,
)
from storage import jobs
from storage.artifacts import tree_sha256
from storage.datasets import snapshot, snapshot_rows
from storage.db import WriteLock
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

    def plan(self, plan: JobPlan) -> None: ...

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
        self.memo = evaluation_memo(ctx.factories)
        self.encoders = len({_fingerprint(f) for f in factories})
        self.total = to_encode(ctx.factories, data, factories, known)
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


def to_encode(
    builder: FactoryBuilder,
    data: EvalData,
    factories: list[PredictorFactory],
    known: list[tuple[PredictorFactory, dict[str, Any]]] = (),  # type: ignore[assignment]
) -> int:
    """The utterances evaluating ``factories`` on ``data`` has to encode: each distinct
    encoder's that the embedding cache lacks, but none of one whose evaluation on these rows is
    already measured (``known``: factory and its options)."""
    memo = evaluation_memo(builder)
    texts = [*data.train_texts, *data.test_texts]
    remembered = {
        _fingerprint(f)
        for f, options in known
        if memo.get(evaluation_key(f, data, **_memo_options(options))) is not None
    }
    distinct = {_fingerprint(f): cast(Encoder, f.encoder) for f in factories}
    return sum(
        len(builder.cache.missing(e, texts)) for k, e in distinct.items() if k not in remembered
    )


def _plan(
    ctx: AppContext,
    cfg: TrainConfig,
    fit_texts: list[str],
    fit_labels: list[tuple[str, ...]],
    data: EvalData,
    others: list[tuple[PredictorFactory, dict[str, Any]]],
    *,
    multi: bool,
    unlabelled: int,
) -> JobPlan:
    """The job's plan: what each phase has to do, counted before training starts. The new
    encoder encodes every distinct train and test utterance; ``others`` (the frozen base and the
    active version, with their options) what the cache lacks of theirs; the int8 copy its parity
    questions, then (when it passes) every utterance again, measured as it will serve."""
    new = len({*data.train_texts, *data.test_texts})
    parity = 0
    if ctx.settings.int8 and not multi:
        pool, _, queries = parity_split(data, PARITY_QUERIES)
        parity = len(pool) + len(queries) + new if len(queries) >= 20 and pool else 0
    return JobPlan.estimate(
        steps=planned_steps(fit_texts, fit_labels, cfg),
        batch_size=cfg.batch_size,
        to_evaluate=new + to_encode(ctx.factories, data, [f for f, _ in others], others),
        parity=parity,
        unlabelled=unlabelled,
    )


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
    with ctx.db.write(WriteLock.project(project_id)) as s:
        dv = snapshot(s, project_id)
        project = get_project(s, project_id)
        base, use_context = project.base_encoder, encodes_context(project.settings)
        settings = dict(project.settings or {})
        # a project that encodes context trains and evaluates on what its pool will encode
        rows = as_encoded(snapshot_rows(dv), project.settings)
        active = active_version(s, project_id)
        dv_id, dv_hash = dv.id, dv.content_hash
    unlabelled = sum(1 for r in rows if r.split == "unlabelled")
    train = EvalData.from_rows(rows)  # labelled rows only: what the encoder is tuned on
    multi = is_multilabel(train.train_labels)
    # "no intent" rows (train/test, no labels) teach a multi-label head what is none of them
    data = EvalData.from_rows(rows, with_unlabelled=multi)
    # an intent with fewer than 2 examples is left out of training only (issue 43, hole 5)
    fit = trainable(train.train_texts, train.train_labels)
    options: dict[str, Any] = {"multi_label": multi, "head": head_options}
    # each encoder scored by the Predictor it would serve: the project's anchors, rule and k,
    # from the one factory
    base_factory = ctx.predictor_factory(project_id, ctx.base_encoder(base))
    # the active version as it serves (its int8 copy when that serves): the gate compares what
    # serves with what would serve
    ref_factory = (
        base_factory
        if active is None
        else ctx.version_factory(project_id, active, base, settings, served=True)
    )
    # the frozen base and the active version serve a head fitted with the default options
    # (AppContext.space_head); measured on these rows before, they are read, not measured
    base_options: dict[str, Any] = {"multi_label": multi, "head": {}}
    ref_options: dict[str, Any] = {
        "multi_label": multi,
        "head": head_options if ref_factory.head is not None else {},
    }
    others = [(base_factory, base_options), (ref_factory, ref_options)]
    reporter.plan(
        _plan(ctx, cfg, fit.texts, fit.labels, data, others, multi=multi, unlabelled=unlabelled)
    )
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

    with ctx.artifacts.writing(rel) as tmp:
        trained.save(tmp)
        # the model in memory, not read back: its weights are the ones just written (issue 44)
        new_encoder = trained.saved_encoder(tmp)
        new_factory = ctx.predictor_factory(project_id, new_encoder)
        evaluation = Evaluation(
            ctx, reporter, data, [new_factory, base_factory, ref_factory], others
        )
        reporter.log(
            f"evaluating {evaluation.encoders} encoders on {data.split}: "
            f"{evaluation.total:,} utterances to encode",
            phase="evaluating",
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
        base_metrics, _ = evaluation.score(base_factory, remembered=True, **base_options)
        ref_metrics, _ = evaluation.score(ref_factory, remembered=True, **ref_options)
        int8: dict[str, Any] = {"passed": False, "reason": INT8_OFF}
        if ctx.settings.int8:
            reporter.log("checking the int8 encoder's parity", phase="int8")
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
        with ctx.db.write(WriteLock.project(project_id)) as s:
            jobs.require_running(s, job_id)  # cancelled or reaped: nothing it made may count
            mv_id = register_version(s, new, activate=passed)
            jobs.registered(s, job_id, mv_id)
    except BaseException:
        ctx.artifacts.remove(rel)  # never leave an unreferenced artifact behind
        raise
    acc, base_acc = served.accuracy or 0.0, base_metrics.accuracy or 0.0
    left_out = f" {fit.note()}." if fit.left_out else ""
    return mv_id, (
        f"v{mv_id}: accuracy {acc:.3f} (frozen {base_acc:.3f}), trained in "
        f"{train_seconds:.0f} s. {why}"
        f"{left_out}"
    )
