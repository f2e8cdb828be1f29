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


def named_pool_stamp(s: Session | Connection, name: str) -> tuple[int, tuple[int, ...]] | None:
    """The id and :func:`pool_stamp` of the project called ``name`` in one statement (what a
    prediction by project name reads first); None when no project has that name."""
    row = s.execute(_stamp_statement(by_name=True), {"name": name}).one_or_none()
    if row is None:
        return None
    return int(row[0]), tuple(int(v) for v in row[1:])


@functools.cache
def _stamp_statement(*, by_name: bool = False) -> Select[Any]:
    project_id: Any = Project.id if by_name else bindparam("project_id")

    def scalar(column: Any, table: Any) -> Any:
        return select(column).where(table.project_id == project_id).scalar_subquery()

    first = (Project.id,) if by_name else ()
    where = Project.name == bindparam("name") if by_name else Project.id == project_id
    return select(
        *first,
        Project.version,
        func.coalesce(Project.active_model_version_id, 0),
        scalar(func.coalesce(func.max(LabelEvent.id), 0), LabelEvent),
        scalar(func.count(), Utterance),
        scalar(func.coalesce(func.sum(Utterance.version), 0), Utterance),
        scalar(func.count(), Intent),
        scalar(func.coalesce(func.sum(Intent.version), 0), Intent),
        scalar(func.coalesce(func.sum(Intent.id), 0), Intent),
    ).where(where)
