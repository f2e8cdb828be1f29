"""How a process knows its copy of a project's labelled pool is stale: :func:`pool_stamp`, one
statement every prediction runs, and :func:`pool_revision`, the part of it that says the labelled
rows themselves changed."""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import Connection, Select, bindparam, func, select
from sqlalchemy.orm import Session

from storage.errors import NotFoundError
from storage.tables import Intent, LabelEvent, Project, Utterance


def last_label_event(s: Session, project_id: int) -> int:
    """The id of the project's newest label event (0: none yet): a mark that the label events
    after it are counted from (an automatic retrain's)."""
    last = s.scalar(select(func.max(LabelEvent.id)).where(LabelEvent.project_id == project_id))
    return int(last or 0)


def pool_revision(s: Session, project_id: int) -> tuple[int, int, int]:
    """A cheap fingerprint that changes whenever the labelled pool may have changed (any label
    event, utterance edit or insert). Processes compare it to know when to reload."""
    last_event = s.scalar(
        select(func.max(LabelEvent.id)).where(LabelEvent.project_id == project_id)
    )
    n, version_sum = s.execute(
        select(func.count(), func.coalesce(func.sum(Utterance.version), 0)).where(
            Utterance.project_id == project_id
        )
    ).one()
    return (last_event or 0, int(n), int(version_sum))


def pool_stamp(s: Session | Connection, project_id: int) -> tuple[int, ...]:
    """One statement whose answer changes whenever anything a project's live pool is built from
    may have changed: the project row (settings, active version, base encoder: its version
    counter), its intents (names, descriptions), and :func:`pool_revision`'s label events,
    utterance inserts and edits. A process that finds the stamp unchanged reuses its pool without
    reading anything else (the statement is built once: every prediction runs it). Raises
    NotFoundError for an unknown project."""
    row = s.execute(_stamp_statement(), {"project_id": project_id}).one_or_none()
    if row is None:
        raise NotFoundError(f"No project {project_id!r}.")
    return tuple(int(v) for v in row)


def stamp_columns(project_id: Any = None) -> tuple[Any, ...]:
    """The columns of :func:`pool_stamp` for the project whose id is ``project_id`` (a column or
    a bound parameter; default: the row's own ``Project.id``), to select beside other columns
    of the project in the same statement."""
    pid: Any = Project.id if project_id is None else project_id

    def scalar(column: Any, table: Any) -> Any:
        return select(column).where(table.project_id == pid).scalar_subquery()

    return (
        Project.version,
        func.coalesce(Project.active_model_version_id, 0),
        scalar(func.coalesce(func.max(LabelEvent.id), 0), LabelEvent),
        scalar(func.count(), Utterance),
        scalar(func.coalesce(func.sum(Utterance.version), 0), Utterance),
        scalar(func.count(), Intent),
        scalar(func.coalesce(func.sum(Intent.version), 0), Intent),
        scalar(func.coalesce(func.sum(Intent.id), 0), Intent),
    )


@functools.cache
def _stamp_statement() -> Select[Any]:
    project_id: Any = bindparam("project_id")
    return select(*stamp_columns(project_id)).where(Project.id == project_id)
