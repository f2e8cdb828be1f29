r"""The retrain pipeline a worker runs for one job, as named phases (:data:`PHASES`), each a
function of this package that ``bench/job_profile.py`` times:

``snapshot`` (:func:`snapshot`: the dataset version, the rows, the encoders it is compared
with) → ``train`` (:func:`train`), during which each stage's end is a **checkpoint**
(:mod:`app.services.training.retrain_checkpoints`: the first pass over the labelled utterances,
then the whole run), each ``save``\ d (the artifact written under a temporary name, the model
kept in memory), ``measure``\ d (:func:`app.services.training.retrain_measure.measure`: the new
encoder as it will serve; the frozen base and the active version read when their numbers on
these rows are known) and ``serve``\ d (:func:`app.services.training.retrain_serve.serve`: the
promotion gate, the job's version registered and, when it passed, active: it answers from
here; a later checkpoint moves the version only when it measures better) while training goes
on → ``int8`` (:func:`app.services.training.retrain_int8.int8_copy`, only where the compute
budget builds one: a CPU; the fp32 version serves meanwhile) → ``register``
(:func:`app.services.training.retrain_serve.register`: the version's record completed, the int8
copy switched in when it passed parity, the switch logged) → ``calibrate``
(:func:`app.services.training.retrain_calibrate.calibrate`, only where the project's
out-of-scope calibration is held-out: ``auto`` on a GPU; the version serves with the quick
thresholds meanwhile, then with the held-out ones).

So a first version answers as soon as the first pass is trained and measured (an anytime
retrain, issue 63: how long the first pass may be is the compute budget's,
:meth:`app.serving.compute.ComputeBudget.first_pass`), and better ones replace it as they are measured;
on a CPU the best one's int8 copy replaces it a few seconds after training ends. A cancel or a
worker's stop after the first version serves keeps the best version measured (:class:`Kept`).

Progress is one share of the whole job (:class:`app.services.training.job_plan.JobPlan`, planned
before training), through the job's phases in order, a checkpoint's saving, evaluating and
serving within training. The job reaches 100 % once its record is complete.

A failure or a crash before the first ``serve`` leaves the active model unchanged and no
referenced artifact half-written: the artifact is written under a temporary name and renamed
when complete, and removed again when registering it fails. After ``serve`` the version counts:
a failed int8 copy only leaves it serving fp32.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from app.project_settings import as_encoded, settings_of
from app.services.training.retrain_calibrate import calibrate, calibration_plan, held_out_steps
from app.services.training.retrain_checkpoints import Checkpoints, resumed_version, save
from app.services.training.retrain_continue import (
    continuation,
    continue_active,
    continued_steps,
)
from app.services.training.retrain_int8 import int8_copy, int8_plan
from app.services.training.retrain_measure import Evaluation, Known, gate_sample, plan, to_encode
from app.services.training.retrain_serve import PROMOTION_TOLERANCE, checkpoint_words, register
from app.services.training.retrain_state import (
    EvalProgress,
    Reporter,
    RetrainRun,
    Served,
    Snapshot,
    Trained,
)
from app.services.training.retrain_warm import wait_until_warm
from core.evaluation import EvalData
from core.multilabel.rule import is_multilabel
from core.training import (
    TrainConfig,
    TrainingCancelled,
    TrainProgress,
    checkpoint_steps,
    method_title,
    planned_steps,
    train_encoder,
    trainable,
)
from storage import jobs
from storage.datasets import snapshot as dataset_snapshot
from storage.datasets import snapshot_rows
from storage.db import WriteLock
from storage.job_phases import PHASES as JOB_PHASES
from storage.job_phases import TRAINING
from storage.job_view import JobView
from storage.pool_state import last_label_event
from storage.projects import get_project
from storage.versions import active_version

__all__ = [
    "PHASES",
    "PROMOTION_TOLERANCE",
    "EvalProgress",
    "Evaluation",
    "Kept",
    "Reporter",
    "run_retrain",
    "save",
    "snapshot",
    "to_encode",
    "train",
]

# The pipeline's phases in order, by the name of the function that runs each (what
# bench/job_profile.py's table names): storage.job_phases's one table.
PHASES = tuple(p.step for p in JOB_PHASES)


def snapshot(
    run: RetrainRun,
    project_id: int,
    head_options: dict[str, Any],
    *,
    trigger: str = "manual",
) -> Snapshot:
    """The ``snapshot`` phase: the dataset version (written once per content) and everything
    the job reads of the project, in one transaction (the project's newest label event is
    recorded on the job: labels after it make the next automatic retrain); then
    the frozen base and the active version as they serve, which the new version is compared
    with (the base encoder is read here when the process has not kept it)."""
    with run.live.db.write(WriteLock.project(project_id)) as s:
        dv = dataset_snapshot(s, project_id)
        project = get_project(s, project_id)
        base, settings = project.base_encoder, settings_of(project)
        # a project that encodes context trains and evaluates on what its pool will encode
        rows = as_encoded(snapshot_rows(dv), settings)
        active = active_version(s, project_id)
        dataset_id, dataset_hash = dv.id, dv.content_hash
        # last: the job's row is locked only as this commits (its beats, a hand-back wait not)
        jobs.mark_labels(s, run.job_id, last_label_event(s, project_id))
    if run.reporter.should_cancel():  # a stop as the data was read: before the encoders load
        raise TrainingCancelled("cancelled while preparing the data")
    train_rows = EvalData.from_rows(rows)  # labelled rows only: what the encoder is tuned on
    multi = is_multilabel(train_rows.train_labels)
    snap = Snapshot(
        project_id=project_id,
        dataset_id=dataset_id,
        dataset_hash=dataset_hash,
        base=base,
        settings=settings,
        use_context=settings.encode_context,
        active=active,
        # "no intent" rows (train/test, no labels) teach a multi-label head what is none of them
        data=EvalData.from_rows(rows, with_unlabelled=multi),
        # an intent with fewer than 2 examples is left out of training only (issue 43, hole 5)
        fit=trainable(train_rows.train_texts, train_rows.train_labels),
        multi=multi,
        unlabelled=sum(1 for r in rows if r.split == "unlabelled"),
        head_options=dict(head_options),
        trigger=trigger,
    )
    return replace(snap, others=_others(run, snap))


def train(
    run: RetrainRun,
    snap: Snapshot,
    cfg: TrainConfig,
    checkpoints: Checkpoints | None = None,
    offset: int = 0,
) -> Trained:
    """The ``train`` phase: the base encoder (the process's, kept between jobs and warmed when
    the worker started, :mod:`app.services.training.retrain_warm`) copied and tuned on the
    snapshot's trainable rows (:func:`core.training.train_encoder`); ``checkpoints`` saves,
    measures and serves each stage's end as it comes (the first pass, then the whole run:
    :mod:`app.services.training.retrain_checkpoints`). ``offset``: the job's steps trained
    before this run (a continuation's): its progress counts on from them."""
    fit = snap.fit
    ends = checkpoint_steps(fit.texts, fit.labels, cfg)
    if offset:
        what = f"the whole recipe from the base encoder behind it ({ends[-1]} steps)"
    elif len(ends) > 1:
        what = f"a first version after step {ends[0]} of {ends[-1]}"
    else:
        what = ""
    run.reporter.log(
        f"training {method_title(cfg.method)} ({cfg.method}) on {len(fit.texts)} utterances"
        + (f", {what}" if what else ""),
        phase=TRAINING,
    )
    if fit.left_out:
        run.reporter.log(fit.note())
    started = time.monotonic()
    model = train_encoder(
        snap.base,
        fit.texts,
        fit.labels,
        cfg,
        progress=_after(run.reporter.progress, offset),
        should_cancel=run.reporter.should_cancel,
        device=run.device,
        prefixes=run.live.models.prefixes,
        checkpoint=checkpoints,
    )
    steps = int(model.stats.get("steps") or 0)
    return Trained(model, time.monotonic() - started, steps, steps)


def _after(progress: Any, offset: int) -> Any:
    """A run's progress as the job's: its steps after the ``offset`` trained before it."""
    if not offset:
        return progress

    def report(p: TrainProgress) -> None:
        progress(replace(p, step=p.step + offset, total=p.total + offset))

    return report


def _others(run: RetrainRun, snap: Snapshot) -> Known:
    """The frozen base and the active version as they serve, with the options each is scored
    with: the gate compares what serves with what would serve, and both serve a head fitted with
    the default options (``LivePools.space_head``) when they have none of their own."""
    pid = snap.project_id
    base_encoder = run.live.models.base_encoder(snap.base)
    base_factory = run.live.factories.predictor_factory(pid, base_encoder, snap.settings)
    ref_factory = (
        base_factory
        if snap.active is None
        else run.live.factories.version_factory(
            pid, snap.active, snap.base, snap.settings, served=True
        )
    )
    base_options: dict[str, Any] = {"multi_label": snap.multi, "head": {}}
    ref_options: dict[str, Any] = {
        "multi_label": snap.multi,
        "head": snap.head_options if ref_factory.head is not None else {},
    }
    return [(base_factory, base_options), (ref_factory, ref_options)]


def run_retrain(
    run: RetrainRun,
    project_id: int,
    cfg: TrainConfig,
    head_options: dict[str, Any],
    *,
    trigger: str = "manual",
    anytime: bool = True,
    job: JobView | None = None,
) -> tuple[int, str]:
    """Train, measure, serve and register a version, phase by phase (see the module), with
    the pieces of ``run`` (the compute budget decides what its device makes cheap); ``trigger``:
    who asked for it;
    ``anytime``: someone waits on the app for a first version (a worker's job: each checkpoint
    serves as it comes); a CLI run measures and serves what it ends with, once. ``job``: its
    row as claimed: one a stopped worker handed back while improving its version goes on
    with that version (a checkpoint moves it only when it measures better).
    Returns (version id, the job's closing message). A cancel or a worker's stop once the
    first checkpoint serves keeps it: :class:`Kept` says so."""
    budget = run.budget
    snap = snapshot(run, project_id, head_options, trigger=trigger)
    cfg = budget.first_pass(cfg)  # how long the first pass may train on this device
    resumed = resumed_version(run, project_id, job) if job is not None else None
    # a checkpoint's gate measures a sample of the test split (the whole split is the record's)
    snap = replace(snap, sample=gate_sample(snap.data, budget.gate_sample, seed=project_id))
    if anytime and resumed is None:  # someone waits on the app: a first version continues
        snap = replace(snap, continued=continuation(run, snap, cfg))
    int8 = int8_plan(run, snap)  # what the version records of its int8 copy at first
    calibration = calibration_plan(budget, snap)  # and of its out-of-scope calibration
    extra_steps = held_out_steps(snap, cfg) if calibration.get("pending") else 0
    run.reporter.plan(plan(run, cfg, snap, bool(int8.get("pending")), extra_steps, anytime))
    if run.reporter.should_cancel():
        raise TrainingCancelled("cancelled while preparing the data")
    checkpoints = Checkpoints(run, snap, int8, calibration, anytime=anytime, resumed=resumed)
    try:
        # a warm-up under way finishes first (the two never share the device); a stop ends it
        wait_until_warm(should_cancel=run.reporter.should_cancel)
        if snap.continued is not None:
            steps = continued_steps(snap, cfg)
            checkpoints.total = steps + planned_steps(snap.fit.texts, snap.fit.labels, cfg)
            continue_active(run, snap, cfg, checkpoints)
            checkpoints.offset = steps
        train(run, snap, cfg, checkpoints, offset=checkpoints.offset)
    except TrainingCancelled as exc:
        if checkpoints.served is None:
            raise
        raise Kept(checkpoints.served.version_id, _kept(run.reporter, checkpoints.served)) from exc
    finally:
        checkpoints.remove_superseded()
    served, measured = checkpoints.served, checkpoints.best
    assert served is not None, "the last checkpoint is always measured"
    if measured is None:  # handed back while improving, and no checkpoint since did better
        return served.version_id, (
            f"v{served.version_id} keeps its {checkpoint_words(served.step, served.total)}: "
            "the training that went on after its worker stopped measured no better."
        )
    # the record, on the whole test split: the int8 copy's measurement where one replaces the
    # fp32 encoder (a CPU), else the fp32 encoder's (when its gate measured a sample)
    copy = int8_copy(run, snap, served, measured) if int8.get("pending") else None
    if copy is None or copy.metrics is None:
        measured = checkpoints.record() or measured
        served = checkpoints.served or served
    message = register(run, snap, served, measured, copy, prepare=anytime)
    calibrated = calibrate(run, snap, checkpoints.config or cfg, served, calibration)
    # what it trained and did not keep (the whole recipe behind a continuation, not better)
    said = (message, checkpoints.passed_over, calibrated)
    return served.version_id, " ".join(part.strip() for part in said if part.strip())


class Kept(Exception):
    """A cancel or a worker's stop ended an anytime retrain after its version began to serve:
    the version keeps the best checkpoint it measured (``version_id``); ``message`` says so."""

    def __init__(self, version_id: int, message: str) -> None:
        super().__init__(message)
        self.version_id, self.message = version_id, message


def _kept(reporter: Reporter, served: Served) -> str:
    who = "its worker stopped" if reporter.handing_back else "cancelled"
    return (
        f"{who} while improving it; v{served.version_id} keeps serving its "
        f"{checkpoint_words(served.step, served.total)} in fp32"
    )
