"""Users and their roles. Passwords arrive here already hashed (see :mod:`app.auth`)."""

from __future__ import annotations

import re

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from storage.errors import ConflictError, NotFoundError, StorageError
from storage.tables import User

ROLES = ("viewer", "designer", "admin")
_NAME = re.compile(r"[A-Za-z0-9_.@-]{1,80}")


def create_user(s: Session, name: str, role: str, password_hash: str) -> User:
    name = name.strip()
    if not _NAME.fullmatch(name):
        raise StorageError("A user name is 1-80 letters, digits or _ . @ -.")
    if role not in ROLES:
        raise StorageError(f"Unknown role {role!r}: use one of {', '.join(ROLES)}.")
    if s.scalar(select(User).where(User.name == name)) is not None:
        raise ConflictError(f"There is already a user {name!r}.")
    user = User(name=name, role=role, password_hash=password_hash)
    s.add(user)
    s.flush()
    return user


def get_user(s: Session, name: str) -> User:
    user = s.scalar(select(User).where(User.name == name))
    if user is None:
        raise NotFoundError(f"No user {name!r}.")
    return user


def list_users(s: Session) -> list[User]:
    return list(s.scalars(select(User).order_by(User.name)))


def count_admins(s: Session) -> int:
    return int(s.scalar(select(func.count()).select_from(User).where(User.role == "admin")) or 0)


def set_role(s: Session, name: str, role: str) -> User:
    if role not in ROLES:
        raise StorageError(f"Unknown role {role!r}: use one of {', '.join(ROLES)}.")
    user = get_user(s, name)
    if user.role == "admin" and role != "admin" and count_admins(s) == 1:
        raise StorageError("This is the last admin; make another admin first.")
    user.role = role
    return user


def set_token_hash(s: Session, name: str, token_hash: str | None) -> User:
    """Store the hash of ``name``'s new API token (replacing any earlier one; None revokes it)."""
    user = get_user(s, name)
    user.api_token_hash = token_hash
    s.flush()
    return user


def user_by_token_hash(s: Session, token_hash: str) -> User:
    """The user whose API token hashes to ``token_hash``; NotFoundError when none does."""
    user = s.scalar(select(User).where(User.api_token_hash == token_hash))
    if user is None:
        raise NotFoundError("Unknown or revoked API token.")
    return user
