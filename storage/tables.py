"""The relational model: projects, intents, utterances, labels and their audit trail, versions, jobs,
the accounts (a team's memberships, assignments and answers: :mod:`storage.team_tables`).

Every table that people edit concurrently carries a ``version`` column used for optimistic locking
(SQLAlchemy's ``version_id_col``): a save based on a stale read raises ``StaleDataError``.
Schema changes go through Alembic migrations in ``storage/migrations``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

SPLITS = ("train", "test", "unlabelled")
JOB_STATUSES = ("queued", "running", "succeeded", "failed", "cancelled")


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(80), unique=True)
    role: Mapped[str] = mapped_column(String(16), default="designer")
    password_hash: Mapped[str | None] = mapped_column(String(255), default=None)
    # sha256 (hex) of the user's REST API token; the token itself is shown once, never stored
    api_token_hash: Mapped[str | None] = mapped_column(
        String(64), default=None, unique=True, index=True
    )
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    # active, locked (no sign-in, no session, no token until unlocked) or removed (the row stays
    # so the audit log keeps its name; its password and token are gone)
    status: Mapped[str] = mapped_column(String(16), default="active", server_default="active")
    # when the password last changed (or the user was locked or removed): a browser session
    # signed in before it has ended
    credentials_changed_at: Mapped[datetime | None] = mapped_column(DateTime, default=None)


class Project(Base):
    __tablename__ = "projects"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(120), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    base_encoder: Mapped[str] = mapped_column(String(200), default="minilm")
    read_only: Mapped[bool] = mapped_column(Boolean, default=False)
    active_model_version_id: Mapped[int | None] = mapped_column(
        ForeignKey("model_versions.id", use_alter=True, name="fk_project_active_model"),
        default=None,
    )
    settings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    version: Mapped[int] = mapped_column(Integer, default=1)

    intents: Mapped[list[Intent]] = relationship(
        back_populates="project", cascade="all, delete-orphan", passive_deletes=True
    )

    __mapper_args__ = {"version_id_col": version}


class Intent(Base):
    __tablename__ = "intents"
    __table_args__ = (UniqueConstraint("project_id", "name", name="uq_intent_project_name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(120))
    description: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    version: Mapped[int] = mapped_column(Integer, default=1)

    project: Mapped[Project] = relationship(back_populates="intents")

    __mapper_args__ = {"version_id_col": version}


class Utterance(Base):
    __tablename__ = "utterances"
    __table_args__ = (
        UniqueConstraint("project_id", "text", name="uq_utterance_project_text"),
        Index("ix_utterance_project_split", "project_id", "split"),
        Index("ix_utterance_project_version", "project_id", "version"),  # the pool stamp's (0018)
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    text: Mapped[str] = mapped_column(Text)
    split: Mapped[str] = mapped_column(String(16), default="train")
    # The preceding bot turn, when known (ConveRT's multi-context idea); optional.
    context: Mapped[str] = mapped_column(Text, default="")
    # Entity annotations on ``text`` (TaDSE slots): ``[{"start", "end", "entity"}, ...]``; the
    # text stays the surface text the classifier sees. Kept from a Rasa import, written back.
    entities: Mapped[list[Any]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, onupdate=utcnow)
    version: Mapped[int] = mapped_column(Integer, default=1)

    labels: Mapped[list[Label]] = relationship(
        back_populates="utterance", cascade="all, delete-orphan", passive_deletes=True
    )

    __mapper_args__ = {"version_id_col": version}


class Label(Base):
    """An utterance carries an intent. Many-to-many: multi-label from day one."""

    __tablename__ = "labels"

    utterance_id: Mapped[int] = mapped_column(
        ForeignKey("utterances.id", ondelete="CASCADE"), primary_key=True
    )
    intent_id: Mapped[int] = mapped_column(
        ForeignKey("intents.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    utterance: Mapped[Utterance] = relationship(back_populates="labels")
    intent: Mapped[Intent] = relationship()


class SlotValue(Base):
    """One value of a slot in a project's slot book (TaDSE); a slot exists while it has values."""

    __tablename__ = "slot_values"
    __table_args__ = (
        UniqueConstraint("project_id", "slot", "value", name="uq_slot_value"),
        Index("ix_slot_value_project", "project_id", "slot"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    slot: Mapped[str] = mapped_column(String(80))
    value: Mapped[str] = mapped_column(String(200))
    # the other ways the value is written (an entity type's synonyms: "card" for "credit card")
    synonyms: Mapped[list[str]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Template(Base):
    """An intent's template: an utterance with ``{slot}`` placeholders (TaDSE)."""

    __tablename__ = "templates"
    __table_args__ = (UniqueConstraint("intent_id", "text", name="uq_template_intent_text"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    intent_id: Mapped[int] = mapped_column(ForeignKey("intents.id", ondelete="CASCADE"), index=True)
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class LabelEvent(Base):
    """Append-only audit of label changes; ``before``/``after`` hold intent *names* so that an undo
    can restore labels even after an intent was renamed away or deleted."""

    __tablename__ = "label_events"
    __table_args__ = (
        Index("ix_label_event_project", "project_id", "id"),
        Index("ix_label_event_utterance", "utterance_id"),
        Index("ix_label_event_batch", "project_id", "batch"),
        Index("ix_label_event_gone", "project_id", "gone_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    utterance_id: Mapped[int | None] = mapped_column(
        ForeignKey("utterances.id", ondelete="SET NULL"), default=None
    )
    utterance_text: Mapped[str] = mapped_column(Text, default="")
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), default=None)
    # Events written by one action (e.g. a merge) share a batch id and are undone together.
    batch: Mapped[str] = mapped_column(String(36))
    action: Mapped[str] = mapped_column(String(32))
    before: Mapped[list[Any]] = mapped_column(JSON, default=list)
    after: Mapped[list[Any]] = mapped_column(JSON, default=list)
    split_before: Mapped[str | None] = mapped_column(String(16), default=None)
    split_after: Mapped[str | None] = mapped_column(String(16), default=None)
    undone: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    # The id of the utterance the event is about while that utterance is deleted (utterance_id
    # is then NULL): its undone delete brings it back under this id, and links the event again.
    gone_id: Mapped[int | None] = mapped_column(Integer, default=None)
    # A delete event's: what the row held besides text, intents and split (context, entities,
    # created_at), so that its undo restores the same row.
    kept: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    # The served model's decision (intent names; [] out of scope) on the Label tab's card this
    # label answered; None: not known (an automatic retrain weighs it: storage.job_history).
    served: Mapped[list[Any] | None] = mapped_column(JSON, default=None)


class DatasetVersion(Base):
    """An immutable snapshot of a project's utterances and labels, identified by a content hash."""

    __tablename__ = "dataset_versions"
    __table_args__ = (UniqueConstraint("project_id", "content_hash", name="uq_dataset_hash"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    content_hash: Mapped[str] = mapped_column(String(64))
    n_utterances: Mapped[int] = mapped_column(Integer)
    n_labelled: Mapped[int] = mapped_column(Integer)
    n_intents: Mapped[int] = mapped_column(Integer)
    # gzip-compressed canonical JSON of the rows (see storage.datasets).
    snapshot: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class ModelVersion(Base):
    __tablename__ = "model_versions"

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    dataset_version_id: Mapped[int | None] = mapped_column(
        ForeignKey("dataset_versions.id"), default=None
    )
    method: Mapped[str] = mapped_column(String(40))
    base_encoder: Mapped[str] = mapped_column(String(200))
    config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    metrics: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # Relative to the artifact directory; None for the frozen base encoder.
    artifact_path: Mapped[str | None] = mapped_column(String(500), default=None)
    artifact_sha256: Mapped[str | None] = mapped_column(String(64), default=None)
    artifact_size: Mapped[int | None] = mapped_column(Integer, default=None)
    note: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    # The retention rule's (app.services.models.retention): pinned, last made active by a person,
    # last exported; why its files were removed (None: it has them); its int8 copy's bytes.
    pinned: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")
    activated_at: Mapped[datetime | None] = mapped_column(DateTime, default=None)
    exported_at: Mapped[datetime | None] = mapped_column(DateTime, default=None)
    files_removed: Mapped[str | None] = mapped_column(String(200), default=None)
    int8_size: Mapped[int | None] = mapped_column(Integer, default=None)


class ProjectActivity(Base):
    """When someone last worked on a project in the Label tab (:mod:`storage.activity`)."""

    __tablename__ = "project_activity"

    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True
    )
    active_at: Mapped[datetime] = mapped_column(DateTime)


class TrainingJob(Base):
    __tablename__ = "training_jobs"
    __table_args__ = (Index("ix_job_project_status", "project_id", "status"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), default=None)
    status: Mapped[str] = mapped_column(String(16), default="queued")
    config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # The phase running now (app.services.training.job_plan.PHASES); step/total count it where it is
    # counted: "training" (steps), "evaluating" (utterances), else no count.
    phase: Mapped[str] = mapped_column(String(16), default="", server_default="")
    step: Mapped[int] = mapped_column(Integer, default=0)
    total: Mapped[int] = mapped_column(Integer, default=0)
    loss: Mapped[float | None] = mapped_column(Float, default=None)
    # The whole job's seconds left (None: no honest estimate), written by the worker each second.
    eta_seconds: Mapped[float | None] = mapped_column(Float, default=None)
    # The whole job's share done, 0 to 1, only ever raised (storage.jobs.set_progress).
    progress: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    message: Mapped[str] = mapped_column(Text, default="")
    log: Mapped[str] = mapped_column(Text, default="")
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    worker_pid: Mapped[int | None] = mapped_column(Integer, default=None)
    # running: the worker's last beat; queued: when the queue was first seen without the job's
    # message (storage.job_reaper.reap_lost_jobs), None while it is there
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime, default=None)
    model_version_id: Mapped[int | None] = mapped_column(
        ForeignKey("model_versions.id"), default=None
    )
    # The training step of the checkpoint the job's version serves now (an anytime retrain's
    # first pass, then each better one); None before its version serves.
    served_step: Mapped[int | None] = mapped_column(Integer, default=None)
    # The training's planned steps (its last checkpoint's), once planned.
    train_steps: Mapped[int | None] = mapped_column(Integer, default=None)
    # Who asked: "manual" (the Train tab, REST, the CLI) or "auto" (after enough new labels).
    trigger: Mapped[str] = mapped_column(String(16), default="manual", server_default="manual")
    # The project's newest label event when the job read its data (None until it did): the
    # labels after it count towards the next automatic retrain.
    label_mark: Mapped[int | None] = mapped_column(Integer, default=None)
    # What its version's last checkpoint measured and whether it serves, in one line (issue 71
    # item 6): "v9 (continuing v8 with 23 new labels) measured 88.6 % vs 88.3 %: serves".
    verdict: Mapped[str] = mapped_column(Text, default="", server_default="")
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(DateTime, default=None)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime, default=None)


class ImportedAgent(Base):
    """The platform agent (Dialogflow, Lex, Watson, LUIS, CLU) a project was imported from, as
    its files were (a zip, or one JSON file): what the app does not model (responses, entities,
    flows, slots' prompts) is written back from it on export. One per project; a blob of at most
    the upload limit, in its own table so that loading a project never loads it."""

    __tablename__ = "imported_agents"

    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True
    )
    format: Mapped[str] = mapped_column(String(40))
    content: Mapped[bytes] = mapped_column(LargeBinary)
    sha256: Mapped[str] = mapped_column(String(64))
    # The language read from it ("": the agent's default); an export writes that language.
    language: Mapped[str] = mapped_column(String(35), default="", server_default="")
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
