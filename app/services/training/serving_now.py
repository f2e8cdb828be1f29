"""What serves a project now and whether a retrain is improving it, in the words of the Label
tab's model line: the version that serves and its measured accuracy, "improving…" while a
retrain (an automatic one included) runs, and, when another model starts serving, what changed
in one line (accuracy before → after).

All of it is the stored state, read as the Train tab and the Versions table read it: the
project's active version and its served metrics (:func:`app.serving.int8.served_metrics`), its
newest job (:func:`app.services.training.retrain_jobs.describe`). A page polls :func:`stamp`, one
cheap read (:func:`storage.versions.serving_stamp`), and reads :func:`serving_now` only when the
stamp moved.

Example:
    >>> v7 = Serving(1, 7, "1:7:aa", 0.812, 0.70, (100, 100), None)
    >>> v8 = Serving(1, 8, "1:8:bb", 0.804, 0.70, (25, 100), None)
    >>> what_changed(v7, v8)
    'v8 (first pass) now serves: accuracy 81.2 % → 80.4 %'
"""

from __future__ import annotations

from dataclasses import dataclass

from app.access import ProjectHandle
from app.services.training import retrain_jobs
from app.services.training.job_plan import PHASE_NAMES
from app.serving.int8 import served_metrics
from app.serving.training_queue import TrainingQueue
from core.evaluation.version_metrics import VersionMetrics
from storage import versions
from storage.db import Database
from storage.job_phases import TRAINING
from storage.job_view import JobView


@dataclass(frozen=True)
class Serving:
    """What serves a project: its active ``version`` (None: the frozen base encoder), the
    ``model`` that serves (project, version and artifact: it changes when another model starts
    serving, a version moved to a better checkpoint included), the version's measured
    ``accuracy`` and the frozen base's on the same rows (``base_accuracy``), the ``steps`` of
    its job's training its checkpoint holds (done, planned: fewer for a first pass), and the
    project's ``job`` while one is queued or running."""

    project_id: int
    version: int | None
    model: str
    accuracy: float | None
    base_accuracy: float | None
    steps: tuple[int | None, int | None]
    job: JobView | None
    stage: str = ""  # a continuation's words: "continuing v8 with 23 new labels" (issue 71)
    # the version it was measured against and that one's accuracy on the same questions (a
    # continuation's gate measures both on a sample: its accuracy is the sample's, not the whole
    # split's the version before it recorded)
    compared: tuple[int | None, float | None] = (None, None)
    # the newest job's verdict when it ended with none of its checkpoints serving, and whether
    # it was automatic: said until another job starts (issue 71 item 6)
    kept: str = ""
    kept_auto: bool = False

    @property
    def first_pass(self) -> bool:
        done, planned = self.steps
        return done is not None and planned is not None and done < planned

    @property
    def name(self) -> str:
        """ "v8", "v8 (first pass)", "v9 (continuing v8 with 23 new labels)", "the frozen base
        encoder"."""
        if self.version is None:
            return "the frozen base encoder"
        if self.stage:
            return f"v{self.version} ({self.stage})"
        return f"v{self.version}" + (" (first pass)" if self.first_pass else "")


def stamp(db: Database, p: ProjectHandle) -> tuple[object, ...]:
    """One cheap read that changes whenever :func:`serving_now`'s answer may have."""
    with db.session() as s:
        return versions.serving_stamp(s, p.id)


def serving_now(training: TrainingQueue, p: ProjectHandle) -> Serving:
    """What serves the project ``p`` now, and its retrain while one is active."""
    with training.db.session() as s:
        mv = versions.active_version(s, p.id)
        settings = p.settings
    job = retrain_jobs.latest_job(training, p)
    kept = job.verdict if job is not None and job.kept_back else ""
    auto = job is not None and job.trigger == "auto"
    if mv is None:
        model = f"{p.id}:base"
        return Serving(
            p.id, None, model, None, None, (None, None), _active(job), kept=kept, kept_auto=auto
        )
    m = served_metrics(VersionMetrics.from_dict(mv.metrics), settings)
    steps = m.extra.get("steps")
    planned = m.extra.get("of_steps") or steps
    return Serving(
        p.id,
        mv.id,
        f"{p.id}:{mv.id}:{mv.artifact_sha256 or ''}",
        m.accuracy,
        m.base.accuracy if m.base else None,
        (steps, planned),
        _active(job),
        str(m.extra.get("continued") or ""),
        (m.reference.get("version"), m.reference.get("accuracy")),
        kept,
        auto,
    )


def _active(job: JobView | None) -> JobView | None:
    return job if job is not None and job.active else None


def percent(value: float | None) -> str:
    """An accuracy as the line says it: "84.1 %"; "not measured" without one.

    Example:
        >>> percent(0.8412), percent(None)
        ('84.1 %', 'not measured')
    """
    return "not measured" if value is None else f"{100 * value:.1f} %"


def serving_words(now: Serving) -> str:
    """Which model serves and its accuracy: "v8 (first pass) · accuracy 80.4 %", "the frozen
    base encoder"."""
    if now.version is None:
        return "the frozen base encoder"
    return f"{now.name} · accuracy {percent(now.accuracy)}"


def kept_words(now: Serving) -> str:
    """The last retrain's verdict when none of its checkpoints serves: "last retrain
    (automatic): v9 (continuing v8 with 23 new labels) kept back: 86.9 % < 88.3 %, v8 keeps
    serving"; "" otherwise."""
    if not now.kept:
        return ""
    return f"last retrain{' (automatic)' if now.kept_auto else ''}: {now.kept}"


def improving_words(now: Serving) -> str:
    """While a retrain is queued or runs: "improving… (automatic) step 60 of 100 · about 30 s
    left" (its version serves a first pass while the rest trains), "improving… Training · step
    12 of 100 · estimating…", "improving… waiting for a worker to take it"; "" without one."""
    job = now.job
    if job is None:
        return ""
    who = "(automatic) " if job.trigger == "auto" else ""
    if job.improving:
        doing = retrain_jobs.improving_words(job)
    elif job.status == "running" and job.phase in PHASE_NAMES:  # its phase, step and time left
        step = f" · step {job.step:,} of {job.total:,}" if job.phase == TRAINING else ""
        kept = f"{job.verdict} · " if job.verdict else ""  # a checkpoint the gate kept back
        doing = f"{kept}{PHASE_NAMES[job.phase]}{step if job.total else ''} · "
        doing += retrain_jobs.left_words(job)
    else:  # waiting for a worker
        doing = retrain_jobs.describe(job)
    return f"improving… {who}{doing}"


def what_changed(before: Serving, now: Serving) -> str:
    """One line when another model starts serving: "v9 now serves: accuracy 81.2 % → 84.0 %";
    "" when the same model serves. A version's accuracy before it (the frozen base's) is the one
    measured with it, on the same rows; so is the version it replaces, where the new one was
    measured against it (a continuation's gate sample: 86.5 % → 86.7 % on its 1,000 questions,
    not the whole split's 87.2 % → the sample's 86.7 %).

    Example:
        >>> v8 = Serving(1, 8, "1:8:bb", 0.872, 0.70, (100, 100), None)
        >>> v9 = Serving(1, 9, "1:9:cc", 0.867, 0.70, (4, 4), None, "", (8, 0.865))
        >>> what_changed(v8, v9)
        'v9 now serves: accuracy 86.5 % → 86.7 %'
    """
    if before.project_id != now.project_id or before.model == now.model:
        return ""
    was = before.accuracy if before.version is not None else now.base_accuracy
    against, on_the_same_rows = now.compared
    if before.version is not None and against == before.version and on_the_same_rows is not None:
        was = on_the_same_rows
    is_ = now.accuracy if now.version is not None else before.base_accuracy
    name = now.name
    if now.version is not None and now.version == before.version and not now.first_pass:
        planned = now.steps[1]
        name += f" (all {planned:,} steps)" if planned else " (a better checkpoint)"
    subject = name if now.version is not None else "The frozen base encoder"
    return f"{subject} now serves: accuracy {percent(was)} → {percent(is_)}"
