"""A training job as the app reads it: :class:`JobView`, the plain record of a job's row, and
what its fields mean together (whether it is active, its percent done, whether its version serves
an earlier checkpoint while training goes on).

Every reader of a job (the Train tab, REST, the automatic retrain, the version files' keeper)
gets one of these from :mod:`storage.jobs` or :mod:`storage.job_history`; none sees the row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from storage.job_phases import EVALUATING, SAVING, SERVING, TRAINING
from storage.tables import TrainingJob, utcnow

ACTIVE_STATUSES = ("queued", "running")


@dataclass(frozen=True)
class JobView:
    id: int
    project_id: int
    status: str
    phase: str
    step: int
    total: int
    loss: float | None
    eta_seconds: float | None
    message: str
    log: str
    model_version_id: int | None
    config: dict[str, Any]
    progress: float = 0.0  # the whole job's share done (app.services.training.job_plan), never less
    elapsed: float | None = None  # seconds since a worker took it (to its end once ended)
    served_step: int | None = None  # the step of the checkpoint its version serves now
    train_steps: int | None = None  # of the training's planned steps
    trigger: str = "manual"  # "manual" or "auto" (started by new labels)
    created: datetime | None = None  # when it was asked for
    user_id: int | None = None  # who asked (None: the local operator, or an automatic one)
    verdict: str = ""  # what its version's checkpoint measured, and whether it serves

    @property
    def improving(self) -> bool:
        """Whether its version serves an earlier checkpoint while training goes on (an anytime
        retrain's first pass)."""
        return (
            self.status == "running"
            and self.served_step is not None
            and self.train_steps is not None
            and self.served_step < self.train_steps
            and self.phase in (TRAINING, SAVING, EVALUATING, SERVING)
        )

    @property
    def fraction(self) -> float:
        """Of the current phase's count (``training`` steps, ``evaluating`` utterances)."""
        return self.step / self.total if self.total else 0.0

    @property
    def percent(self) -> int:
        """The whole job's percent done (one bar for every phase, never going back); 100 only
        once the job succeeded (the version is registered): until then at most 99."""
        if self.status == "succeeded":
            return 100
        return min(99, math.floor(100 * self.progress))

    @property
    def active(self) -> bool:
        return self.status in ACTIVE_STATUSES

    @property
    def kept_back(self) -> bool:
        """Whether it ended with none of its checkpoints serving: its ``verdict`` then says
        which was kept back and which version keeps serving."""
        return self.status == "succeeded" and self.served_step is None and bool(self.verdict)


def view_of(job: TrainingJob) -> JobView:
    """The plain record of a job's row."""
    elapsed = None
    if job.started_at is not None:
        elapsed = max(0.0, ((job.finished_at or utcnow()) - job.started_at).total_seconds())
    progress = float(job.progress or 0.0)
    return JobView(
        job.id,
        job.project_id,
        job.status,
        job.phase,
        job.step,
        job.total,
        job.loss,
        job.eta_seconds if job.status == "running" else None,
        job.message,
        job.log,
        job.model_version_id,
        dict(job.config),
        progress,
        elapsed,
        job.served_step,
        job.train_steps,
        job.trigger or "manual",
        job.created_at,
        job.user_id,
        job.verdict or "",
    )
