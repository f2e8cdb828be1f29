"""A project's versions' files, applied: the retention rule's pass (:func:`prune`: after every
job ends, :func:`after_job`, and on demand), pin and unpin, one version's files removed by hand
(:func:`remove_files`), and the disk the versions use (:func:`disk_of`). The rule itself is
:mod:`app.services.models.retention`.

Model files are never removed while a process may still read them. A pass decides in one
transaction that holds the project's row (:func:`storage.versions.locked_project`, which an
activation takes too): never the active version, never the version a queued job goes on
improving, nothing at all while a retrain of the project runs (it reads the version that was
active when it started); the versions it removes are marked first, so from its commit on no
process is directed to their files, then the files go through the store's own ``remove`` (a
bucket: uncommitted first, then its objects). A store that does not answer leaves the files
there (said, and logged); the rows stay marked.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from app.access import ProjectHandle, open_project
from app.access.actions import TRAIN
from app.access.auth import LOCAL
from app.services.models import retention
from core.errors import logged
from storage import jobs, versions
from storage.artifacts import ArtifactStore
from storage.db import Database, WriteLock
from storage.errors import (
    ArtifactsUnavailable,
    ConflictError,
    DatabaseUnavailable,
    NotFoundError,
)
from storage.job_view import JobView
from storage.tables import ModelVersion

logger = logging.getLogger(__name__)

RUNNING = "a retrain of it is running (it reads the version that served when it started)"
# What the pass decides: (the active version, the history, the project's queued or running job)
# -> the versions whose files go, with why.
Decide = Callable[[int | None, list[ModelVersion], JobView | None], dict[int, str]]


@dataclass(frozen=True)
class Removed:
    """What a pass removed: the versions (with why), the bytes freed, the artifacts the store
    did not remove (it did not answer), and why it removed nothing (a retrain runs)."""

    versions: dict[int, str] = field(default_factory=dict)
    freed: int = 0
    left: tuple[str, ...] = ()
    waited: str = ""

    def message(self, name: str) -> str:
        if self.waited:
            return (
                f"Project {name!r}: nothing removed now: {self.waited}; the rule runs when it ends."
            )
        if not self.versions:
            return f"Project {name!r}: every version's files are kept by the retention rule."
        gone = ", ".join(f"v{v}" for v in sorted(self.versions))
        said = f"Removed the files of {gone} ({retention.size_words(self.freed)} freed)."
        if self.left:
            said += f" The model store did not answer: {len(self.left)} folder(s) are left there."
        return said


def in_use(job: JobView | None) -> set[int]:
    """The versions the project's queued or running job uses (a handed-back job goes on
    improving its version)."""
    return {job.model_version_id} if job is not None and job.model_version_id else set()


def _apply(db: Database, artifacts: ArtifactStore, project_id: int, decide: Decide) -> Removed:
    """Decide and mark in one transaction holding the project's row, then remove the files
    (the int8 copies not measured yet are measured first: what is freed is counted exactly)."""
    _measure_int8(db, artifacts, project_id)
    with db.write(WriteLock.project(project_id)) as s:
        project = versions.locked_project(s, project_id)
        job = jobs.active_job(s, project_id)
        rows = [mv for mv, _ in versions.history(s, project_id)]
        going = decide(project.active_model_version_id, rows, job)
        versions.mark_files_removed(s, project_id, going)
    if job is not None and job.status == "running":  # the rule waits for its end
        return Removed(waited=RUNNING)
    # an artifact another version keeps (with files) is never removed, whoever referenced it
    kept = {
        r for mv in rows if mv.id not in going and not mv.files_removed for r in retention.rels(mv)
    }
    doomed = [r for mv in rows if mv.id in going for r in retention.rels(mv) if r not in kept]
    left = []
    for rel in doomed:
        try:
            artifacts.remove(rel)
        except ArtifactsUnavailable as exc:  # the rows stay marked: nothing reads these now
            logger.warning("project %s: %s left in the model store: %s", project_id, rel, exc)
            left.append(rel)
    freed = sum(retention.version_bytes(mv) for mv in rows if mv.id in going)
    return Removed(going, freed, tuple(left))


def _by_rule(newest: int) -> Decide:
    def decide(active: int | None, rows: list[ModelVersion], job: JobView | None) -> dict[int, str]:
        if job is not None and job.status == "running":
            return {}
        facts = [retention.facts(mv) for mv in rows]
        kept = retention.rule(facts, active=active, newest=newest, in_use=in_use(job))
        return {
            f.version: retention.removal_words(f)
            for f in facts
            if f.has_files and kept[f.version] is None
        }

    return decide


def prune(db: Database, artifacts: ArtifactStore, p: ProjectHandle) -> Removed:
    """Apply the retention rule to ``p``'s versions now (``versions prune``, the panel's
    button, REST): the files of every version it does not keep are removed."""
    p.require_writable(TRAIN)
    return _apply(db, artifacts, p.id, _by_rule(p.settings.keep_versions))


def after_job(db: Database, artifacts: ArtifactStore, project_id: int) -> Removed | None:
    """The pass a worker runs once a job of the project ended (whatever its end): a version its
    automatic retrain kept back leaves nothing, and the rule keeps the rest in bounds. A
    failure is logged, never the job's: the next job's end tries again."""
    try:
        p = open_project(db, project_id, LOCAL)
        removed = _apply(db, artifacts, project_id, _by_rule(p.settings.keep_versions))
    except (DatabaseUnavailable, ArtifactsUnavailable, NotFoundError) as exc:
        logger.warning("project %s: the retention rule did not run: %s", project_id, exc)
        return None
    except Exception:
        logged(logger, "project %s: the retention rule's pass failed", project_id)
        return None
    if removed.versions:
        logger.info("project %s: %s", p.name, removed.message(p.name))
    return removed


def remove_files(db: Database, artifacts: ArtifactStore, p: ProjectHandle, version: int) -> str:
    """Remove one version's files by hand (the row stays, saying who removed them): refused for
    the active version, a pinned one, and while a retrain of the project runs."""
    p.require_writable(TRAIN)
    who = p.actor.name or "the operator"

    def decide(active: int | None, rows: list[ModelVersion], job: JobView | None) -> dict[int, str]:
        mv = next((r for r in rows if r.id == version), None)
        if mv is None:
            raise NotFoundError(f"No model version #{version} in project {p.name!r}.")
        if mv.files_removed:
            return {}
        if version == active:
            raise ConflictError(f"v{version} serves: make another version active first.")
        if (job is not None and job.status == "running") or version in in_use(job):
            raise ConflictError(
                f"v{version}'s files stay while {RUNNING}: remove them once it ends."
            )
        if mv.pinned:
            raise ConflictError(f"v{version} is pinned: unpin it first.")
        return {version: f"its files were removed by {who}"}

    removed = _apply(db, artifacts, p.id, decide)
    if not removed.versions:
        return f"v{version} has no files already."
    return removed.message(p.name)


def pin(db: Database, p: ProjectHandle, version: int, pinned: bool = True) -> str:
    """Pin (or unpin) a version: a pinned one keeps its files whatever else the rule says; an
    unpinned one keeps them while the rule keeps it for another reason."""
    p.require_writable(TRAIN)
    with db.write(WriteLock.project(p.id)) as s:
        changed = versions.set_pinned(s, p.id, version, pinned)
    if pinned:
        return (
            f"v{version} is pinned: it keeps its files."
            if changed
            else f"v{version} was pinned already."
        )
    if not changed:
        return f"v{version} was not pinned."
    return (
        f"v{version} is unpinned: the retention rule removes its files when a job ends (or "
        "now: Apply the retention rule) unless it keeps it for another reason."
    )


def disk_of(db: Database, p: ProjectHandle, budget_mb: int) -> retention.Disk:
    """The disk ``p``'s versions use, against the deployment's budget."""
    with db.session() as s:
        rows = [mv for mv, _ in versions.history(s, p.id)]
    return retention.disk(rows, budget_mb)


def check_budget(db: Database, p: ProjectHandle, budget_mb: int) -> None:
    """Refuse a retrain of ``p`` whose versions already use its disk budget
    (:func:`app.services.models.retention.check_budget`); nothing is written."""
    retention.check_budget(p, disk_of(db, p, budget_mb))


def _measure_int8(db: Database, artifacts: ArtifactStore, project_id: int) -> None:
    """Record the bytes of the versions' own int8 copies not measured yet, from this process's
    copy of them (never downloaded to be measured: a bucket's copy not cached here is measured
    by a process that has it; its ``size_mb`` counts meanwhile)."""
    with db.session() as s:
        rows = [mv for mv, _ in versions.history(s, project_id)]
    sizes = {}
    for mv in rows:
        rel = retention.int8_rel(mv)
        if rel is None or mv.int8_size is not None or mv.files_removed:
            continue
        folder = ArtifactStore.path(artifacts, rel)  # the local folder (a bucket's cache)
        if folder.is_dir():
            sizes[mv.id] = _folder_bytes(folder)
    if sizes:
        with db.write(WriteLock.project(project_id)) as s:
            versions.record_int8_size(s, project_id, sizes)


def _folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def exported(db: Database, p: ProjectHandle, version: int) -> None:
    """Record that ``version`` was exported (a bundle of it, or the report while it served):
    the retention rule keeps its files. A bundle is exported by a designer, the report by
    anyone who reads the project: what it records is the service's, not the reader's change."""
    with db.write(WriteLock.project(p.id)) as s:
        versions.mark_exported(s, p.id, version)


def keep_words(db: Database, p: ProjectHandle) -> str:
    """The ``keep_versions`` setting's line: what the retention rule keeps, and how many of the
    project's versions have files now."""
    with db.session() as s:
        rows = [mv for mv, _ in versions.history(s, p.id)]
    n = p.settings.keep_versions
    have = sum(1 for mv in rows if not mv.files_removed)
    return (
        f"The active version, the newest {n} and every version pinned, activated by hand or "
        "exported keep their files; the others' files are removed when a retrain ends "
        f"({have} of {len(rows)} version(s) have files now)."
    )
