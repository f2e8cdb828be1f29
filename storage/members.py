"""Who belongs to which project, with what role there (:class:`storage.team_tables.ProjectMember`).

A user's role in a project is their membership's, never above their own role (an admin is an
admin everywhere and needs no membership). Someone who is no member does not see the project:
the app resolves a project for a user through :func:`member_role` and answers as if the
project did not exist. The rule that combines the two roles lives in :mod:`app.access`.

Example:
    >>> # with s a Session: set_member(s, project_id, user_id, "viewer"); member_role(s, ...)
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from storage.errors import NotFoundError, StorageError
from storage.pool_state import stamp_columns
from storage.tables import Project, User, utcnow
from storage.team_tables import ProjectMember

MEMBER_ROLES = ("viewer", "designer")


@dataclass(frozen=True)
class Member:
    name: str
    role: str  # their role in the project
    user_role: str  # their own role
    status: str


def member_role(s: Session, project_id: int, user_id: int) -> str | None:
    """The user's role in the project (None: not a member)."""
    found = s.scalar(
        select(ProjectMember.role).where(
            ProjectMember.project_id == project_id, ProjectMember.user_id == user_id
        )
    )
    return str(found) if found is not None else None


def set_member(s: Session, project_id: int, user_id: int, role: str) -> bool:
    """Make the user a member of the project with ``role`` (or change their role there).
    Returns True when they were not a member before."""
    if role not in MEMBER_ROLES:
        raise StorageError(
            f"A role in a project is one of {', '.join(MEMBER_ROLES)}, not {role!r} "
            "(admins need no membership)."
        )
    found = s.scalar(
        select(ProjectMember).where(
            ProjectMember.project_id == project_id, ProjectMember.user_id == user_id
        )
    )
    if found is None:
        s.add(ProjectMember(project_id=project_id, user_id=user_id, role=role, created_at=utcnow()))
        s.flush()
        return True
    found.role = role
    s.flush()
    return False


def read_only_memberships(s: Session, user_id: int) -> int:
    """How many read-only projects (opened from a bundle) the user is a member of."""
    return int(
        s.scalar(
            select(func.count())
            .select_from(ProjectMember)
            .join(Project, Project.id == ProjectMember.project_id)
            .where(ProjectMember.user_id == user_id, Project.read_only.is_(True))
        )
        or 0
    )


def remove_member(s: Session, project_id: int, user_id: int) -> None:
    """End the user's membership of the project; NotFoundError when they had none."""
    done = s.execute(
        delete(ProjectMember).where(
            ProjectMember.project_id == project_id, ProjectMember.user_id == user_id
        )
    )
    if not getattr(done, "rowcount", 0):
        raise NotFoundError("Not a member of this project.")


def members(s: Session, project_id: int) -> list[Member]:
    """The project's members (removed users left out), by name."""
    rows = s.execute(
        select(User.name, ProjectMember.role, User.role, User.status)
        .join(User, User.id == ProjectMember.user_id)
        .where(ProjectMember.project_id == project_id, User.status != "removed")
        .order_by(User.name)
    )
    return [Member(name, role, user_role, status) for name, role, user_role, status in rows]


def project_with_role(
    s: Session, project: str | int, user_id: int | None, *, stamp: bool = False
) -> tuple[Project, str | None, tuple[int, ...] | None] | None:
    """The project ``project`` (a name, or an id: a REST path may name one by its id), the
    user's role there as a member (None: no member, or ``user_id`` None) and, with ``stamp``,
    its pool's stamp (:func:`storage.pool_state.pool_stamp`), in one statement; None when there
    is no such project."""
    member = select(ProjectMember.role).where(
        ProjectMember.project_id == Project.id, ProjectMember.user_id == user_id
    )
    query = select(Project, member.scalar_subquery(), *(stamp_columns() if stamp else ()))
    if isinstance(project, int):
        found = s.execute(query.where(Project.id == project)).first()
    else:
        found = s.execute(query.where(Project.name == project)).first()
        if found is None and project.isdigit():
            found = s.execute(query.where(Project.id == int(project))).first()
    if found is None:
        return None
    read = tuple(int(v) for v in found[2:]) if stamp else None
    return found[0], found[1], read


def visible_project_names(s: Session, user_id: int | None) -> list[str]:
    """The names of the projects a user is a member of (every project for ``None``), by name."""
    query = select(Project.name).order_by(Project.name)
    if user_id is not None:
        mine = select(ProjectMember.project_id).where(ProjectMember.user_id == user_id)
        query = query.where(Project.id.in_(mine))
    return list(s.scalars(query))
