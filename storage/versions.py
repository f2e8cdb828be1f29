"""Model versions: register one (optionally making it active in the same transaction), complete
its record later (:func:`record_metrics`), look one up, list a project's history, activate or roll
back; what the retention rule reads and records (pinned, activated, exported, files removed,
the int8 copy's bytes: :mod:`app.services.models.retention`). Rows are returned detached and
fully loaded, so callers read them after the session closes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import flag_modified

from storage.errors import ConflictError, NotFoundError
from storage.tables import DatasetVersion, ModelVersion, Project, TrainingJob, utcnow


@dataclass(frozen=True)
class NewVersion:
    project_id: int
    dataset_version_id: int | None
    method: str
    base_encoder: str
    config: dict[str, Any]
    metrics: dict[str, Any]
    artifact_path: str | None
    artifact_sha256: str | None
    artifact_size: int | None
    note: str = ""


def _project(s: Session, project_id: int) -> Project:
    p = s.get(Project, project_id)
    if p is None:
        raise NotFoundError(f"No project #{project_id}.")
    return p


def _detached(s: Session, mv: ModelVersion) -> ModelVersion:
    s.flush()
    s.refresh(mv)
    s.expunge(mv)
    return mv


def register_version(s: Session, new: NewVersion, *, activate: bool = False) -> int:
    """Record a model version; with ``activate`` it becomes the project's active model at once."""
    mv = ModelVersion(
        project_id=new.project_id,
        dataset_version_id=new.dataset_version_id,
        method=new.method,
        base_encoder=new.base_encoder,
        config=new.config,
        metrics=new.metrics,
        artifact_path=new.artifact_path,
        artifact_sha256=new.artifact_sha256,
        artifact_size=new.artifact_size,
        note=new.note,
    )
    s.add(mv)
    s.flush()
    if activate:
        _project(s, new.project_id).active_model_version_id = mv.id
    return mv.id


def move_version(s: Session, version_id: int, new: NewVersion, *, activate: bool = False) -> bool:
    """Move a registered version to a better checkpoint of the job that made it (an anytime
    retrain): its artifact, config, metrics and note become ``new``'s; with ``activate`` it
    becomes the project's active model. When it is (or becomes) active the project's row is
    written, so its pool stamp moves and every process's live pool serves the new artifact.
    Returns whether it is the active version now."""
    mv = s.get(ModelVersion, version_id)
    if mv is None or mv.project_id != new.project_id:
        raise NotFoundError(f"No model version {version_id} in this project.")
    mv.config, mv.metrics, mv.note = dict(new.config), dict(new.metrics), new.note
    mv.artifact_path, mv.artifact_sha256 = new.artifact_path, new.artifact_sha256
    mv.artifact_size = new.artifact_size
    project = _project(s, new.project_id)
    if activate:
        project.active_model_version_id = version_id
    active = project.active_model_version_id == version_id
    if active:
        flag_modified(project, "settings")  # an UPDATE of the row: its version counter moves
    return active


def record_metrics(
    s: Session,
    project_id: int,
    version_id: int,
    metrics: dict[str, Any],
    *,
    note: str | None = None,
) -> None:
    """Replace a registered version's metrics (and its note): what a retrain measured after the
    version began to serve (its int8 copy). When it is the project's active version the
    project's row is written too, so its pool stamp moves and every process's live pool picks
    up the encoder that serves it now (:func:`storage.pool_state.pool_stamp`)."""
    mv = s.get(ModelVersion, version_id)
    if mv is None or mv.project_id != project_id:
        raise NotFoundError(f"No model version {version_id} in this project.")
    mv.metrics = dict(metrics)
    if note is not None:
        mv.note = note
    project = _project(s, project_id)
    if project.active_model_version_id == version_id:
        flag_modified(project, "settings")  # an UPDATE of the row: its version counter moves


def get_version(s: Session, project_id: int, version_id: int) -> ModelVersion:
    """A version of this project (detached). Raises NotFoundError for another project's id."""
    mv = s.get(ModelVersion, version_id)
    if mv is None or mv.project_id != project_id:
        raise NotFoundError(f"No model version {version_id} in this project.")
    return _detached(s, mv)


def active_version(s: Session, project_id: int) -> ModelVersion | None:
    """The project's active model version (None = the frozen base encoder)."""
    active_id = _project(s, project_id).active_model_version_id
    return get_version(s, project_id, active_id) if active_id is not None else None


def active_version_ids(s: Session) -> set[int]:
    """Every project's active model version (what serves somewhere now)."""
    column = Project.active_model_version_id
    return set(s.scalars(select(column).where(column.is_not(None))))


class FilesRemoved(ConflictError):
    """A version whose files were removed (:attr:`ModelVersion.files_removed`) was asked to
    serve, or to be kept: it has nothing left to serve or keep."""


def locked_project(s: Session, project_id: int) -> Project:
    """The project's row, locked for this transaction (``SELECT … FOR UPDATE`` on PostgreSQL;
    SQLite has one writer at a time): what an activation and the retention rule's pass both
    take first, so the rule never removes the files of a version that became active meanwhile,
    and an activation never makes active a version whose files it removed."""
    p = s.get(Project, project_id, with_for_update=True, populate_existing=True)
    if p is None:
        raise NotFoundError(f"No project #{project_id}.")
    return p


def _version(s: Session, project_id: int, version_id: int) -> ModelVersion:
    """The version's row in this session, locked (after the project's: :func:`locked_project`)."""
    mv = s.get(ModelVersion, version_id, with_for_update=True, populate_existing=True)
    if mv is None or mv.project_id != project_id:
        raise NotFoundError(f"No model version {version_id} in this project.")
    return mv


def set_active(s: Session, project_id: int, version_id: int | None) -> None:
    """Make ``version_id`` the active model (None = back to the frozen base encoder), as a
    person does (a rollback, an activation): recorded on the version (``activated_at``: the
    retention rule keeps it). Raises :class:`FilesRemoved` for a version with no files."""
    project = locked_project(s, project_id)
    if version_id is not None:
        mv = _version(s, project_id, version_id)
        if mv.files_removed:
            raise FilesRemoved(f"v{version_id} cannot be activated: {mv.files_removed}.")
        mv.activated_at = utcnow()
    project.active_model_version_id = version_id


def set_pinned(s: Session, project_id: int, version_id: int, pinned: bool) -> bool:
    """Pin (or unpin) a version: a pinned one keeps its files whatever the retention rule says
    otherwise. Returns whether it changed. Raises :class:`FilesRemoved` when pinning a version
    that has no files any more."""
    locked_project(s, project_id)
    mv = _version(s, project_id, version_id)
    if pinned and mv.files_removed:
        raise FilesRemoved(f"v{version_id} cannot be pinned: {mv.files_removed}.")
    changed = mv.pinned != pinned
    mv.pinned = pinned
    return changed


def mark_exported(s: Session, project_id: int, version_id: int) -> None:
    """Record that the version was exported (a bundle of it, or the report while it served):
    the retention rule keeps its files."""
    _version(s, project_id, version_id).exported_at = utcnow()


def mark_files_removed(s: Session, project_id: int, removed: Mapping[int, str]) -> None:
    """Record that the versions ``removed`` (id -> why) have no files any more, in the caller's
    transaction (which holds :func:`locked_project`): from its commit on, nothing reads them."""
    for version_id, why in removed.items():
        _version(s, project_id, version_id).files_removed = why


def record_int8_size(s: Session, project_id: int, sizes: Mapping[int, int]) -> None:
    """Record the bytes of the versions' own int8 copies (id -> bytes), once measured."""
    for version_id, size in sizes.items():
        _version(s, project_id, version_id).int8_size = size


def history(s: Session, project_id: int) -> list[tuple[ModelVersion, str]]:
    """Every version of the project, newest first, with the content hash of its dataset."""
    hashes = dict(
        s.execute(
            select(DatasetVersion.id, DatasetVersion.content_hash).where(
                DatasetVersion.project_id == project_id
            )
        ).all()
    )
    versions = s.scalars(
        select(ModelVersion)
        .where(ModelVersion.project_id == project_id)
        .order_by(ModelVersion.id.desc())
    ).all()
    return [(_detached(s, mv), hashes.get(mv.dataset_version_id or -1) or "") for mv in versions]


def touch_unretrained(s: Session, base: str) -> int:
    """Move the pool stamp of every project on the base encoder ``base`` that serves it (no
    active version): what serves the base changed (its int8 copy was built), so every process's
    live pool of those projects picks it up. Returns how many."""
    projects = s.scalars(
        select(Project).where(
            Project.base_encoder == base, Project.active_model_version_id.is_(None)
        )
    ).all()
    for project in projects:
        flag_modified(project, "settings")  # an UPDATE of the row: its version counter moves
    return len(projects)


def serving_stamp(s: Session, project_id: int) -> tuple[Any, ...]:
    """What serves the project and how its newest retrain goes, as two small rows a page may
    poll every few seconds: the active version and its artifact's hash (either changes when
    another model starts serving, a version moved to a better checkpoint included), the project
    row's version counter (a version's metrics recorded), and the newest job's id, status,
    phase, step, served step and time left (to 10 s). An equal stamp: nothing to read again.
    Raises NotFoundError for an unknown project."""
    row = s.execute(
        select(Project.active_model_version_id, ModelVersion.artifact_sha256, Project.version)
        .outerjoin(ModelVersion, ModelVersion.id == Project.active_model_version_id)
        .where(Project.id == project_id)
    ).one_or_none()
    if row is None:
        raise NotFoundError(f"No project {project_id!r}.")
    job = s.execute(
        select(
            TrainingJob.id,
            TrainingJob.status,
            TrainingJob.phase,
            TrainingJob.step,
            TrainingJob.served_step,
            TrainingJob.eta_seconds,
        )
        .where(TrainingJob.project_id == project_id)
        .order_by(TrainingJob.id.desc())
        .limit(1)
    ).one_or_none()
    left = () if job is None else (*job[:5], None if job[5] is None else round(job[5] / 10))
    return (project_id, *row, *left)


def switch_active(s: Session, project_id: int, was: int | None, to: int | None) -> bool:
    """Make ``to`` the project's active version (None: the frozen base encoder) when ``was``
    still is: a retrain's version whose measurement on the whole test split decides otherwise
    than its gate's sample did (issue 71 item 3). False when someone activated another
    meanwhile (theirs stays)."""
    project = _project(s, project_id)
    if project.active_model_version_id != was:
        return False
    if to is not None and s.get(ModelVersion, to) is None:
        to = None
    project.active_model_version_id = to
    return True
