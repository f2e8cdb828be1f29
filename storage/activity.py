"""When someone last worked on a project in the Label tab (issue 71 item 2): one row per project
(``project_activity``), its time on the database's clock (:func:`storage.jobs.clock`), so a
worker on another machine reads it as the server that wrote it meant it. The server writes it
(:class:`app.perimeter.in_use.Working`: a key, a card shown, a card asked for and not yet shown;
at most one write per project every few seconds) and the automatic retrain's watcher reads it
(:mod:`app.services.training.auto_retrain`: its quiet spell counts from it).

Example:
    >>> from datetime import datetime
    >>> from storage.db import Database
    >>> from storage.projects import create_project
    >>> db = Database("sqlite://")
    >>> with db.session() as s:
    ...     pid = create_project(s, "p").id
    ...     active_at(s, pid) is None
    True
    >>> with db.session() as s:
    ...     mark_active(s, pid, datetime(2026, 11, 28, 12, 0, 5))
    ...     mark_active(s, pid, datetime(2026, 11, 28, 12, 0, 1))  # a late write: kept back
    ...     active_at(s, pid)
    datetime.datetime(2026, 11, 28, 12, 0, 5)
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from storage.tables import Project, ProjectActivity


def mark_active(s: Session, project_id: int, at: datetime) -> None:
    """Someone worked on the project at ``at`` (the database's clock): one statement, whoever
    writes first (two servers of a team alike); an earlier time than the one stored (a write
    that came late) changes nothing, nor does a project deleted meanwhile."""
    if s.get(Project, project_id) is None:
        return
    dialect = postgresql if s.get_bind().dialect.name == "postgresql" else sqlite
    s.execute(
        dialect.insert(ProjectActivity)
        .values(project_id=project_id, active_at=at)
        .on_conflict_do_update(
            index_elements=[ProjectActivity.project_id],
            set_={"active_at": at},
            where=ProjectActivity.active_at < at,
        )
    )


def active_at(s: Session, project_id: int) -> datetime | None:
    """When someone last worked on the project in the Label tab (None: not since it was made)."""
    return s.scalar(
        select(ProjectActivity.active_at).where(ProjectActivity.project_id == project_id)
    )
