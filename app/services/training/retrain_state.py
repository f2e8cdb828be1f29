"""What the retrain's phases take and hand each other (:mod:`app.services.training.retrain`):
the pieces of the process one job uses (:class:`RetrainRun`), the job's :class:`Snapshot`, the trained model (:class:`Trained`), the registered version (:class:`Served`)
and the int8 copy's outcome (:class:`Int8Outcome`); and where a running job reports
(:class:`Reporter`, with the evaluation's :class:`EvalProgress`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from app.project_settings import ProjectSettings
from app.services.training.job_plan import JobPlan
from app.serving.compute import ComputeBudget
from app.serving.live import LivePools
from core.evaluation import EvalData
from core.evaluation.version_metrics import VersionMetrics
from core.retrieval.factory import PredictorFactory
from core.training import Trainable, TrainedModel, TrainProgress
from storage.artifacts import ArtifactStore
from storage.tables import ModelVersion


@dataclass(frozen=True)
class EvalProgress:
    """The evaluation phase: utterances encoded of those the ``encoders`` still had to encode,
    and the seconds left (None until measured)."""

    done: int
    total: int
    encoders: int
    eta: float | None


class Reporter(Protocol):
    """Where a running job reports (the worker's job reporter). ``handing_back``: set once
    :meth:`should_cancel` said stop because the job's worker is stopping (not a user's cancel):
    a job whose version serves then ends without what is left, it is not trained again."""

    handing_back: bool

    def log(self, line: str, *, phase: str | None = None) -> None: ...

    def plan(self, plan: JobPlan) -> None: ...

    def progress(self, p: TrainProgress) -> None: ...

    def evaluation(self, p: EvalProgress) -> None: ...

    def vectors(self, done: int, total: int, eta: float | None) -> None:
        """The first card's utterances encoded in the space that serves (``done`` of ``total``;
        ``eta``: seconds left as measured, None while estimating): the count of ``serving`` or
        ``registering``."""

    def should_cancel(self, *, fresh: bool = False) -> bool:
        """Whether the job stops here (``fresh``: read now, not as polled a moment ago)."""


@dataclass(frozen=True)
class RetrainRun:
    """What one retrain job uses of its process, built once by whoever runs the job (the worker,
    or the CLI through it: :func:`app.worker.retrain_run`), and all a phase takes of it: the
    live pools (which hold the database, the loaded models, the Predictor factories and the
    embedding cache), the artifact store the versions' files go to, the compute budget of the
    device it trains on and that device, whether the deployment makes int8 copies at all, the
    job's id and where the job reports."""

    live: LivePools
    artifacts: ArtifactStore
    budget: ComputeBudget
    device: str | None
    int8: bool
    job_id: int
    reporter: Reporter


@dataclass(frozen=True)
class Continued:
    """What a retrain's first version continues (issue 71 item 1): the active ``version`` (its
    id), its tuned model, and the utterances of the training set whose labels are new or
    changed since it was trained (``focus``: indices into the snapshot's ``fit``), with how
    many intents it did not know (``new_intents``)."""

    version: int
    model: Any  # the active version's SentenceTransformer (a copy is trained)
    focus: tuple[int, ...]
    new_intents: int = 0

    def words(self) -> str:
        """ "continuing v8 with 23 new labels" """
        labels = f"{len(self.focus)} new or changed label{'s' * (len(self.focus) != 1)}"
        intents = f" ({self.new_intents} new intents)" if self.new_intents else ""
        return f"continuing v{self.version} with {labels}{intents}"


@dataclass(frozen=True)
class Snapshot:
    """What one job trains and is measured on, read in one transaction: the dataset version,
    the project's base encoder and settings, its active version, the rows as the project encodes
    them (``data``: scored; ``fit``: what training sees), the head's options, and the encoders
    the new version is compared with (``others``)."""

    project_id: int
    dataset_id: int
    dataset_hash: str
    base: str
    settings: ProjectSettings
    use_context: bool
    active: ModelVersion | None
    data: EvalData
    fit: Trainable
    multi: bool
    unlabelled: int
    head_options: dict[str, Any] = field(default_factory=dict)
    trigger: str = "manual"  # who asked: "manual" or "auto" (storage.jobs.TRIGGERS)
    # what the new version is compared with: the frozen base and the active version as they
    # serve, each with the options it is scored with
    others: list[tuple[PredictorFactory, dict[str, Any]]] = field(default_factory=list)
    # the gate's rows when they are fewer than the whole test split (the compute budget's
    # sample: app.services.training.retrain_measure.gate_sample); None: all of ``data``
    sample: EvalData | None = None
    # the continuation's start: the active version it continues and the new or changed labels
    # (indices into ``fit``), when its first version continues from it (issue 71 item 1)
    continued: Continued | None = None

    @property
    def gate_data(self) -> EvalData:
        """The rows a checkpoint's gate measures it on: the sample, or the whole data."""
        return self.sample if self.sample is not None else self.data

    @property
    def options(self) -> dict[str, Any]:
        """The new version's evaluation options (multi-label, and its head's)."""
        return {"multi_label": self.multi, "head": self.head_options}


@dataclass(frozen=True)
class Trained:
    """A checkpoint of the ``train`` phase: the model after ``step`` of the run's ``total``
    optimiser steps, and the training seconds up to it (the base encoder's copy included)."""

    model: TrainedModel
    seconds: float
    step: int = 0
    total: int = 0
    continued: bool = False  # trained on from the active version (its first version)


@dataclass(frozen=True)
class Served:
    """A registered version: its id and artifact, whether the gate made it active, the gate's
    words, the metrics it was registered with (those of the encoder serving it now), and the
    checkpoint it serves (``step`` of ``total``)."""

    version_id: int
    rel: str
    promoted: bool
    why: str
    metrics: VersionMetrics
    train_seconds: float
    step: int = 0  # the checkpoint it serves (an anytime retrain's first pass, or its end)
    total: int = 0
    stage: str = ""  # what the checkpoint is, for people ("continuing v8 with 23 new labels")


@dataclass(frozen=True)
class Int8Outcome:
    """What the int8 phase found: ``info`` (the version's ``int8`` record: passed, agreement,
    n, variant, size, reason, and the copy's ``artifact`` and ``sha256`` when it passed),
    ``metrics`` (the copy measured as it will serve; None when it will not), ``words`` (one
    sentence for the job's log and the version's note) and ``gate`` (the promotion gate's words
    on the copy's measurement, when the version was promoted), with the measurement itself
    (``whole``)."""

    info: dict[str, Any]
    metrics: VersionMetrics | None
    words: str
    gate: str | None = None
    # the copy's measurement on the whole test split, with the frozen base and the active
    # version beside it (a ``Measured`` of app.services.training.retrain_measure)
    whole: Any = None
    # the copy as it will serve (an OnnxEncoder), when it passed: the queue's candidates are
    # encoded in its space before it serves (app.services.training.retrain_serve.register)
    encoder: Any = None
