"""The front door: a project resolved once, at the edge of every request (a UI event, a REST
call, a CLI command), into a :class:`ProjectHandle` that says which project it is, how it is set
up, who is acting and what their role in it is; the services take the handle, never a name.

:func:`open_project` reads the project and the caller's membership in one statement and refuses
there: a project the caller is no member of answers exactly like one that does not exist, and a
role below what the request needs is refused before anything runs. Every change then goes through
:func:`writing`: a transaction that holds the project's write lock and carries the item rule
(:class:`app.access.policy.ItemPolicy`) for :mod:`storage.guard`, so no write path can skip it.

Example:
    >>> # p = open_project(serving_state.db, "shop", need="designer")
    >>> # with writing(serving_state.db, p) as s: set_labels(s, p.id, 12, ["refund"])
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from app.access.actions import EDIT, Action, checked
from app.access.auth import Actor, current_actor
from app.access.policy import RANK, ItemPolicy, project_role
from app.project_settings import ProjectSettings, settings_of
from storage import guard
from storage.db import Database, Session, WriteLock
from storage.errors import NotFoundError, ReadOnlyProjectError
from storage.members import project_with_role, visible_project_names


@dataclass(frozen=True)
class ProjectHandle:
    """A project as one request sees it: resolved and authorised once (:func:`open_project`)."""

    id: int
    name: str
    read_only: bool  # opened from a model bundle: read and predicted with only
    base_encoder: str
    active_version_id: int | None
    settings: ProjectSettings  # Project.settings, parsed once here: everything below takes it
    actor: Actor
    role: str  # the actor's role in this project: viewer, designer or admin
    # the project's pool stamp read with it (storage.pool_state.pool_stamp), when asked for: a
    # prediction then reads the database once (LivePools.pool(stamp=...))
    stamp: tuple[int, ...] | None = None

    def may(self, role: str) -> bool:
        return RANK[self.role] >= RANK[role]

    def require(self, role: str, action: str = "this") -> None:
        """Refuse (PermissionError) unless the actor's role here includes ``role``."""
        if not self.may(role):
            raise PermissionError(
                f"{self.actor.name} is a {self.role} in {self.name!r}: {action} needs the "
                f"{role} role. Nothing was changed."
            )

    def require_action(self, act: Action) -> None:
        """Refuse (PermissionError) unless the actor's role here allows ``act``, an action of the
        permissions table (:mod:`app.access.actions`; anything else: UnknownAction)."""
        found = checked(act)
        self.require(found.role, found.says)

    def require_writable(self, act: Action = EDIT) -> None:
        """Refuse a change: a read-only project (a bundle's), or a role below what ``act``, an
        action of the permissions table, needs."""
        if self.read_only:
            raise ReadOnlyProjectError(
                f"Project {self.name!r} is read-only (imported from a bundle)."
            )
        self.require_action(act)


def resolve(
    s: Session,
    project: str | int,
    who: Actor | None = None,
    *,
    need: str = "viewer",
    stamp: bool = False,
) -> ProjectHandle:
    """:func:`open_project` within the session ``s``."""
    who = who if who is not None else current_actor()
    if project is None or (isinstance(project, str) and not project.strip()):
        raise NotFoundError("Pick a project first.")
    project = project if isinstance(project, int) else str(project)
    row = project_with_role(s, project, who.id, stamp=stamp)
    found, member, read = row if row is not None else (None, None, None)
    role = project_role(who.role, who.id is None, member) if found is not None else None
    if found is None or role is None:
        raise NotFoundError(f"No project {project!r}.")
    handle = ProjectHandle(
        id=found.id,
        name=found.name,
        read_only=bool(found.read_only),
        base_encoder=found.base_encoder,
        active_version_id=found.active_model_version_id,
        settings=settings_of(found),
        actor=who,
        role=role,
        stamp=read,
    )
    handle.require(need, "this")
    return handle


def open_project(
    db: Database,
    project: str | int,
    who: Actor | None = None,
    *,
    need: str = "viewer",
    stamp: bool = False,
) -> ProjectHandle:
    """The project ``project`` (a name, or an id) as ``who`` (default: the acting user) may use
    it, with at least the role ``need`` there; with ``stamp``, its pool's stamp read in the same
    statement (:attr:`ProjectHandle.stamp`).

    Raises:
        NotFoundError: no such project, or the user is no member of it (the same answer).
        PermissionError: their role in it is below ``need``.
    """
    with db.session() as s:
        return resolve(s, project, who, need=need, stamp=stamp)


def visible_projects(db: Database, who: Actor | None = None) -> list[str]:
    """The names of the projects ``who`` (default: the acting user) sees, by name."""
    who = who if who is not None else current_actor()
    everyone = who.id is None or who.role == "admin"
    with db.session() as s:
        return visible_project_names(s, None if everyone else who.id)


def for_purpose(s: Session, p: ProjectHandle, purpose: str) -> None:
    """Within ``s`` (a :func:`writing` transaction), the item rule for changes made ``purpose``
    from now on (an annotator's answer, a reviewer's decision: :data:`policy.PURPOSES`)."""
    guard.install(s, ItemPolicy(p.actor.id, p.role, purpose))


@contextmanager
def writing(db: Database, p: ProjectHandle, purpose: str = "edit") -> Iterator[Session]:
    """A transaction that changes the project: refused for a read-only project or a role below
    designer; it holds the project's write lock from its start (:meth:`storage.db.Database.write`
    with :meth:`storage.db.WriteLock.project`: the project's writers take turns, another
    project's go on) and every item it changes is checked by the item rule for ``purpose``
    (:class:`app.access.policy.ItemPolicy`, asked by :mod:`storage.guard`)."""
    p.require_writable()
    with db.write(WriteLock.project(p.id)) as s:
        for_purpose(s, p, purpose)
        yield s
