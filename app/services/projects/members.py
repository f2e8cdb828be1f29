"""Who belongs to a project, and with which role there: an admin adds users to a project (a role
in it is never above the user's own), changes their role there, or removes them. Admins see and
change every project and need no membership; anyone else sees only the projects they are a
member of (:mod:`app.access`). Each change is recorded in the security log.

Example:
    >>> add_member(serving_state.db, p, "dana", "viewer")  # doctest: +SKIP
    'dana is now a viewer in shop.'
"""

from __future__ import annotations

from dataclasses import dataclass

from app.access import ProjectHandle
from app.access.actions import MANAGE_MEMBERS
from app.access.auth import Actor
from app.access.policy import RANK
from storage import members as repo
from storage.db import Database, WriteLock
from storage.errors import NotFoundError, StorageError
from storage.users import get_user, list_users, record_event


@dataclass(frozen=True)
class MemberRow:
    name: str
    role: str  # in the project ("admin": an admin, who sees every project)
    user_role: str
    status: str


def members(db: Database, p: ProjectHandle) -> list[MemberRow]:
    """Everyone who sees the project: its members, then the admins (who see every project)."""
    with db.session() as s:
        rows = [MemberRow(m.name, m.role, m.user_role, m.status) for m in repo.members(s, p.id)]
        admins = [
            MemberRow(u.name, "admin", u.role, u.status)
            for u in list_users(s)
            if u.role == "admin" and u.status != "removed"
        ]
    rows = [r for r in rows if r.user_role != "admin"]  # an admin is an admin everywhere
    return [*rows, *admins]


def actor_of(db: Database, name: str) -> Actor:
    """The user ``name`` as an acting user (NotFoundError: no such user)."""
    with db.session() as s:
        user = get_user(s, name)
        return Actor(user.id, user.name, user.role)


def add_member(
    db: Database, p: ProjectHandle, name: str, role: str | None = None, *, actor: str = ""
) -> str:
    """Make ``name`` a member of the project with ``role`` there (default: their own role), or
    change their role there. Needs an admin; the role cannot be above the user's own.

    Raises:
        PermissionError: not an admin. NotFoundError: no such user. StorageError: an admin
            (they need no membership), or a role above the user's own or unknown.
    """
    p.require_action(MANAGE_MEMBERS)
    with db.write(WriteLock.project(p.id, accounts=True)) as s:
        user = get_user(s, (name or "").strip())
        if user.role == "admin":
            raise StorageError(f"{user.name} is an admin: admins see every project already.")
        role = role or user.role
        if RANK.get(role, 99) > RANK[user.role]:
            raise StorageError(
                f"{user.name} is a {user.role}: their role in a project cannot be above it "
                f"(`intent-studio users role {user.name} --role {role}` first). Nothing was "
                "changed."
            )
        new = repo.set_member(s, p.id, user.id, role)
        record_event(
            s, "member", user.name, actor=actor or p.actor.name, detail=f"{p.name}: {role}"
        )
    what = "is now" if new else "is now (changed)"
    return f"{user.name} {what} a {role} in {p.name}."


def remove_member(db: Database, p: ProjectHandle, name: str, *, actor: str = "") -> str:
    """End ``name``'s membership of the project: they no longer see it (at their next request).

    Raises:
        PermissionError: not an admin. NotFoundError: no such user, or no member.
    """
    p.require_action(MANAGE_MEMBERS)
    with db.write(WriteLock.project(p.id, accounts=True)) as s:
        user = get_user(s, (name or "").strip())
        try:
            repo.remove_member(s, p.id, user.id)
        except NotFoundError:
            raise NotFoundError(f"{user.name} is no member of {p.name}.") from None
        record_event(s, "member_removed", user.name, actor=actor or p.actor.name, detail=p.name)
    return f"{user.name} no longer sees {p.name}."
