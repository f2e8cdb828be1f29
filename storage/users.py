"""Users, their roles and status, and the security log. Passwords arrive here already hashed (see
:mod:`app.access.auth`).

A user is ``active``, ``locked`` (kept, but no sign-in, session or token counts until unlocked) or
``removed`` (the row stays so label events keep their author; its password and token are gone, and
every function here except :func:`list_users` and :func:`restore_user` treats it as absent; its
name is not given to a new account). Each change of status or
password is recorded in ``security_events`` (:func:`record_event`)."""

from __future__ import annotations

import re
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from storage.errors import ConflictError, LockedError, NotFoundError, StorageError
from storage.tables import User, utcnow
from storage.team_tables import SecurityEvent
from storage.texts import escape_controls

ROLES = ("viewer", "designer", "admin")
STATUSES = ("active", "locked", "removed")
_NAME = re.compile(r"[A-Za-z0-9_.@-]{1,80}")


def create_user(s: Session, name: str, role: str, password_hash: str) -> User:
    name = name.strip()
    if not _NAME.fullmatch(name):
        raise StorageError("A user name is 1-80 letters, digits or _ . @ -.")
    if role not in ROLES:
        raise StorageError(f"Unknown role {role!r}: use one of {', '.join(ROLES)}.")
    old = s.scalar(select(User).where(User.name == name))
    if old is not None and old.status == "removed":
        raise ConflictError(
            f"{name!r} is the name of a removed user (their past edits keep it), so it is not "
            f"given to a new account. To bring {name} back on purpose: `intent-studio users "
            f"restore {name}` (a new password; the role they had, or --role). Or choose another "
            "name. Nothing was changed."
        )
    if old is not None:
        raise ConflictError(f"There is already a user {name!r}.")
    user = User(name=name, role=role, password_hash=password_hash)
    s.add(user)
    s.flush()
    return user


def restore_user(s: Session, name: str, password_hash: str, role: str | None = None) -> User:
    """Bring a removed user back, on purpose: the same row (their past edits are theirs again),
    active, with a new password, no API token, and the role they had unless ``role`` says.

    Raises:
        NotFoundError: no user ``name`` was ever removed. ConflictError: ``name`` is not removed
            (active or locked: nothing to restore). StorageError: an unknown role.
    """
    if role is not None and role not in ROLES:
        raise StorageError(f"Unknown role {role!r}: use one of {', '.join(ROLES)}.")
    user = s.scalar(select(User).where(User.name == name.strip()))
    if user is None:
        raise NotFoundError(f"No removed user {name!r} to restore; `users add` makes a new one.")
    if user.status != "removed":
        raise ConflictError(f"{name} is {user.status}, not removed: there is nothing to restore.")
    user.status, user.password_hash = "active", password_hash
    user.role = role or user.role
    user.api_token_hash, user.credentials_changed_at = None, utcnow()
    s.flush()
    return user


def get_user(s: Session, name: str) -> User:
    """The user called ``name``, active or locked; NotFoundError for nobody (or a removed one)."""
    user = s.scalar(select(User).where(User.name == name, User.status != "removed"))
    if user is None:
        raise NotFoundError(f"No user {name!r}.")
    return user


def active_user(s: Session, name: str) -> User:
    """The user called ``name`` if they may act now; NotFoundError for nobody, LockedError
    for a locked one."""
    user = get_user(s, name)
    if user.status != "active":
        raise LockedError(f"{name} is locked: an admin can unlock them.")
    return user


def list_users(s: Session) -> list[User]:
    """Every user, removed ones included (their status says so)."""
    return list(s.scalars(select(User).order_by(User.name)))


def count_admins(s: Session) -> int:
    """Admins who can sign in (active)."""
    query = select(func.count()).select_from(User)
    return int(s.scalar(query.where(User.role == "admin", User.status == "active")) or 0)


def _last_admin(s: Session, user: User) -> bool:
    return user.role == "admin" and user.status == "active" and count_admins(s) == 1


def set_role(s: Session, name: str, role: str) -> User:
    if role not in ROLES:
        raise StorageError(f"Unknown role {role!r}: use one of {', '.join(ROLES)}.")
    user = get_user(s, name)
    if role != "admin" and _last_admin(s, user):
        raise StorageError("This is the last admin; make another admin first.")
    user.role = role
    return user


def set_status(s: Session, name: str, status: str) -> User:
    """Lock, unlock or remove ``name``. Locking or removing ends their browser sessions
    (``credentials_changed_at``); removing also drops their password and API token. The last
    active admin can be neither locked nor removed."""
    if status not in STATUSES:
        raise StorageError(f"Unknown status {status!r}: use one of {', '.join(STATUSES)}.")
    user = get_user(s, name)
    if status != "active" and _last_admin(s, user):
        raise StorageError("This is the last admin; make another admin first.")
    user.status = status
    if status != "active":
        user.credentials_changed_at = utcnow()
    if status == "removed":
        user.password_hash, user.api_token_hash = None, None
    s.flush()
    return user


def set_password_hash(s: Session, name: str, password_hash: str) -> User:
    """A new password for ``name``; their browser sessions signed in before it end."""
    user = get_user(s, name)
    user.password_hash, user.credentials_changed_at = password_hash, utcnow()
    s.flush()
    return user


def record_event(
    s: Session, action: str, user_name: str, *, actor: str = "", address: str = "", detail: str = ""
) -> SecurityEvent:
    """Append one row to the security log; every field on one line, its control characters
    written out (``\\u001b``): a name someone typed at the sign-in form is stored as typed,
    but never as a terminal command or a line of its own."""
    event = SecurityEvent(
        action=action[:32],
        user_name=escape_controls(user_name, lines=True)[:80],
        actor=escape_controls(actor, lines=True)[:120],
        address=escape_controls(address, lines=True)[:64],
        detail=escape_controls(detail, lines=True),
    )
    s.add(event)
    s.flush()
    return event


def security_events(
    s: Session, limit: int = 100, *, user: str | None = None, action: str | None = None
) -> list[SecurityEvent]:
    """The security log, newest first: at most ``limit`` events, of ``user`` (the name the event
    is about, or who acted) and of ``action`` when given."""
    query = select(SecurityEvent)
    if user:
        query = query.where((SecurityEvent.user_name == user) | (SecurityEvent.actor == user))
    if action:
        query = query.where(SecurityEvent.action == action)
    return list(s.scalars(query.order_by(SecurityEvent.id.desc()).limit(limit)))


def security_actions(s: Session) -> list[str]:
    """The actions the security log holds, by name."""
    return list(s.scalars(select(SecurityEvent.action).distinct().order_by(SecurityEvent.action)))


def sign_ins_since(s: Session, since: datetime, limit: int = 10_000) -> list[SecurityEvent]:
    """The successful sign-ins (``signed_in``) since ``since``, newest first, at most ``limit``."""
    query = (
        select(SecurityEvent)
        .where(SecurityEvent.action == "signed_in", SecurityEvent.created_at >= since)
        .order_by(SecurityEvent.id.desc())
        .limit(limit)
    )
    return list(s.scalars(query))


def set_token_hash(s: Session, name: str, token_hash: str | None) -> User:
    """Store the hash of ``name``'s new API token (replacing any earlier one; None revokes it)."""
    user = get_user(s, name)
    user.api_token_hash = token_hash
    s.flush()
    return user


def user_by_token_hash(s: Session, token_hash: str) -> User:
    """The active user whose API token hashes to ``token_hash``; NotFoundError when none does
    (a locked user's token counts again once they are unlocked)."""
    user = s.scalar(select(User).where(User.api_token_hash == token_hash, User.status == "active"))
    if user is None:
        raise NotFoundError("Unknown or revoked API token.")
    return user
