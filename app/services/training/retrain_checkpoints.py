"""An anytime retrain's checkpoints (issues 63 and 71): the continuation of the active version
with the new labels (its first version, when the project has one), then each stage's end of the
training from the base encoder (:func:`core.training.fit.stages`: the first pass, then the whole
run) is saved, measured and served while training goes on, in the training thread (training
waits for it).

The first checkpoint that the job measures registers the job's version (:func:`serve`): when it
passes the promotion gate it answers from then on. A later one moves the version to itself only
when it measures better (the primary metric, on the same rows); else it is discarded and the
version keeps the checkpoint it has. A from-base first pass is not measured once a continuation
serves (it cannot beat it: bench/RESULTS.md). Checkpoints are measured on the gate's rows
(:attr:`Snapshot.gate_data`: on a CPU a sample of the test split, stratified by intent, paired
with the active version question by question), so a first version's wait does not grow with the
test split; once training ends the version that serves is measured on the whole split for the
record (:meth:`Checkpoints.record`), and goes back to the version before it if the whole split
says it lost. Only what changed is measured: the frozen base's and the active version's numbers on
these rows are read from the evaluations already measured (:mod:`app.serving.eval_memo`), and
each checkpoint's vectors are new (every layer above the frozen ones moved).

A checkpoint's artifact is written under a temporary name and renamed once measured, like any
version's; one that served and was moved away from is removed once the job ends (a process may
still be reading it meanwhile)."""

from __future__ import annotations

import logging
import uuid
from dataclasses import replace
from typing import Any

from app.services.training.retrain_measure import Measured, measure
from app.services.training.retrain_serve import (
    checkpoint_words,
    serve,
    stage_words,
    verdict,
    verdict_line,
    version_metrics,
)
from app.services.training.retrain_state import Reporter, RetrainRun, Served, Snapshot, Trained
from core.encoding.registry import Encoder
from core.training import TrainConfig, TrainedModel, TrainingCancelled
from storage import jobs
from storage.db import WriteLock
from storage.job_phases import SAVING, TRAINING
from storage.versions import record_metrics, switch_active

logger = logging.getLogger(__name__)


def save(reporter: Reporter, trained: TrainedModel, folder: Any) -> Encoder:
    """The ``save`` phase: the artifact written into ``folder`` (a temporary name, renamed once
    measured); returns the model in memory as the artifact's encoder (its weights are the ones
    just written: never read back, issue 44)."""
    reporter.log("saving the model", phase=SAVING)
    trained.save(folder)
    return trained.saved_encoder(folder)


class Checkpoints:
    """The job's checkpoints as they come (:meth:`__call__`, the training's ``checkpoint``
    callback): ``served`` is the job's version once one serves, ``best`` its measurement.
    ``anytime``: each stage's end serves as it comes; off, only the last one (a CLI run)."""

    def __init__(
        self,
        run: RetrainRun,
        snap: Snapshot,
        int8: dict[str, Any],
        calibration: dict[str, Any],
        *,
        anytime: bool = True,
        resumed: Served | None = None,
    ) -> None:
        self.run, self.snap = run, snap
        self.int8, self.calibration = int8, calibration
        # someone waits on the app for a first version (a worker's job); a CLI run measures and
        # serves only the last checkpoint, and leaves the app's first card to the app
        self.anytime = anytime
        # the job's version when a stopped worker handed the job back while improving it: a
        # checkpoint now moves it only when it measures better than what it serves
        self.served: Served | None = resumed
        self.best_score = resumed.metrics.score if resumed is not None else None
        self.best: Measured | None = None
        self.config: TrainConfig | None = None  # what trained the checkpoint that serves
        self.superseded: list[str] = []  # artifacts a better checkpoint replaced
        # the served checkpoint's model, training and frozen states (its record measures it)
        self.kept: tuple[Encoder, Trained, Any] | None = None
        self.offset = 0  # steps trained before this run's (the continuation's, before the base's)
        self.total = 0  # the job's steps in all (0: the run's own)
        # what the job trained and did not keep, for its closing message ("" : nothing)
        self.passed_over = ""

    def __call__(self, checkpoint: Any) -> None:
        """Save, measure and serve one :class:`core.training.fit.Checkpoint`."""
        continued = not checkpoint.from_base and self.snap.continued is not None
        step, total = checkpoint.step + self.offset, self.total or checkpoint.total
        if not (self.anytime or checkpoint.final):
            return
        if not checkpoint.final and self.continued_serves():
            self.run.reporter.log(
                f"a first pass from the base encoder ({checkpoint_words(step, total)}) is not "
                f"measured: v{self.served.version_id if self.served else '?'} "
                f"({self.served.stage if self.served else ''}) serves; training goes on",
                phase=TRAINING,
            )
            return
        if self.run.reporter.should_cancel(fresh=True):  # steps ran between two polls
            raise TrainingCancelled("cancelled while training")
        seconds = float(checkpoint.trained.stats.get("seconds") or 0.0)  # its training alone
        trained = Trained(checkpoint.trained, seconds, step, total, continued)
        self.run.reporter.log(f"trained {step} of {total} steps in {seconds:.1f} s")
        run, snap = self.run, self.snap
        rel = (
            f"projects/{snap.project_id}/models/job{self.run.job_id}-{step}-{uuid.uuid4().hex[:8]}"
        )
        with run.artifacts.writing(rel) as folder:
            encoder = save(self.run.reporter, checkpoint.trained, folder)
            measured = measure(
                self.run, snap, encoder, folder, checkpoint.prefix, checkpoint.from_base
            )
        if self.served is not None and not better(measured, self.best_score):
            run.artifacts.remove(rel)
            self._on(step, total)
            what = stage_words(snap, trained) or checkpoint_words(step, total)
            if checkpoint.from_base and checkpoint.final and snap.continued is not None:
                what = f"the whole recipe from the base encoder ({step - self.offset} steps)"
            kept = self.served.stage or checkpoint_words(self.served.step, self.served.total)
            said = f"{what} measured {_score(measured)}, not better than {self.best_score:.3f}"
            self.passed_over = (
                f"{said[0].upper()}{said[1:]}: v{self.served.version_id} keeps {kept}."
            )
            self.run.reporter.log(f"{said}: v{self.served.version_id} keeps {kept}")
            return
        served = serve(
            self.run,
            snap,
            rel,
            encoder,
            trained,
            measured,
            self.int8,
            self.calibration,
            current=self.served,
            prepare=self.anytime,
        )
        if self.served is not None:
            self.superseded.append(self.served.rel)
        self.served, self.best = served, measured
        self.best_score = measured.new.score
        self.passed_over = ""  # what an earlier checkpoint did not keep: this one replaced it
        self.config = checkpoint.trained.config
        self.kept = (encoder, trained, checkpoint.prefix)
        self._on(step, total)

    def continued_serves(self) -> bool:
        """The job's version serves its continuation of the active version."""
        return bool(self.served and self.served.promoted and self.served.stage)

    def record(self) -> Measured | None:
        """Once training ended: the version that serves measured on the whole test split for
        the record when its gate measured a sample (the version's metrics become the whole
        split's; "recorded = served"), and the gate again on them: a version the whole split
        says lost goes back to the one active before the job (when nobody activated another
        meanwhile), and the record says so. Returns the measurement the version now records."""
        best, served, kept = self.best, self.served, self.kept
        if best is None or served is None or kept is None or not best.sampled:
            return best
        run, snap = self.run, self.snap
        encoder, trained, prefix = kept
        whole = measure(run, snap, encoder, None, prefix, not trained.continued, data=snap.data)
        passed, why = verdict(run, snap, whole)
        run.reporter.log(f"v{served.version_id} on the whole test split: {why}")
        stage = served.stage
        metrics = version_metrics(
            run, snap, whole, passed, why, self.int8, self.calibration, trained, stage
        )
        note = f"{stage}. {why}" if stage else why
        before = snap.active.id if snap.active else None
        with run.live.db.write(WriteLock.project(snap.project_id)) as s:
            jobs.require_running(s, run.job_id)  # cancelled or reaped: nothing it made may count
            record_metrics(s, snap.project_id, served.version_id, metrics.to_dict(), note=note)
            switched = False
            if served.promoted != passed:  # the whole split decides otherwise than the sample
                mine, other = served.version_id, before
                switched = switch_active(
                    s, snap.project_id, *((mine, other) if served.promoted else (other, mine))
                )
            serves = passed if switched else served.promoted
            said = verdict_line(snap, served.version_id, stage, whole, serves)
            jobs.registered(s, run.job_id, served.version_id, served.step if serves else None, said)
        run.reporter.log(said)
        if served.promoted and not serves:
            name = f"v{before}" if before else "the frozen base encoder"
            run.reporter.log(
                f"v{served.version_id} kept back on the whole split: {name} serves again"
            )
        self.served = replace(served, promoted=serves, why=why, metrics=metrics)
        self.best = whole
        return whole

    def _on(self, step: int, total: int) -> None:
        """Training goes on after a checkpoint that is not the last (its stretch of the plan)."""
        if step < total:
            self.run.reporter.log(f"training on from step {step} of {total}", phase=TRAINING)

    def remove_superseded(self) -> None:
        """Remove the artifacts of checkpoints a better one replaced (at the job's end)."""
        for rel in self.superseded:
            self.run.artifacts.remove(rel)
        self.superseded.clear()


def better(new: Measured, serving: float | None) -> bool:
    """Whether a checkpoint measured better than the one serving (its primary metric,
    ``serving``): higher on the same rows (a tie keeps the one serving).

    Example:
        >>> from core.evaluation.version_metrics import VersionMetrics
        >>> m = Measured(VersionMetrics(accuracy=0.87), *[None] * 5)  # type: ignore[arg-type]
        >>> better(m, 0.86), better(m, 0.87), better(m, None)
        (True, False, True)
    """
    score = new.new.score
    return score is not None and (serving is None or score > serving)


def resumed_version(run: RetrainRun, project_id: int, job: Any) -> Served | None:
    """The version a job handed back while improving it serves (None: the job has none), as
    the next worker's checkpoints take it over."""
    if job.model_version_id is None:
        return None
    from app.access import open_project
    from app.access.auth import LOCAL
    from core.evaluation.version_metrics import VersionMetrics
    from storage.versions import get_version

    with run.live.db.session() as s:
        mv = get_version(s, project_id, job.model_version_id)
    metrics = VersionMetrics.from_dict(mv.metrics)
    active = open_project(run.live.db, project_id, LOCAL).active_version_id == mv.id
    return Served(
        mv.id,
        mv.artifact_path or "",
        active or bool(metrics.gate.get("passed")),
        mv.note,
        metrics,
        float(metrics.train_seconds or 0.0),
        int(job.served_step or 0),
        int(job.train_steps or 0),
    )


def _score(m: Measured) -> str:
    value = m.new.score
    return f"{m.new.primary} {value:.3f}" if value is not None else f"{m.new.primary} unknown"
