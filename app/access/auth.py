"""Who is acting, and may they? Roles: **viewer** (read, try, download reports), **designer**
(label, train, export) and **admin** (users, projects, settings), each including the ones before.

Single-user local mode (the default for ``make run`` on loopback) has no login: everyone is the
local admin. Multi-user mode (``serve --multi-user``) puts Gradio's login in front of every page and
API call, and each write path calls :func:`require` on the server with the signed-in name.
Passwords are hashed with argon2 (argon2-cffi) and never stored or logged in clear. A sign-in
costs one argon2 verification whether or not the name exists (:func:`check_login`), so its time
does not tell which names do; only an active user (not locked or removed) signs in or acts.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from functools import cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from storage.db import ACCOUNTS, Database, Session
from storage.errors import NotFoundError, StorageError
from storage.users import (
    ROLES,
    active_user,
    count_admins,
    create_user,
    get_user,
    record_event,
    set_token_hash,
    user_by_token_hash,
)

logger = logging.getLogger(__name__)

RANK = {role: i for i, role in enumerate(ROLES)}
MIN_PASSWORD = 8
_hasher = PasswordHasher()


@dataclass(frozen=True)
class Actor:
    id: int | None
    name: str
    role: str

    def may(self, role: str) -> bool:
        return RANK[self.role] >= RANK[role]


LOCAL = Actor(None, "local", "admin")
_acting: ContextVar[Actor] = ContextVar("acting", default=LOCAL)


def current_actor() -> Actor:
    """The user on whose behalf this call runs (the local admin in single-user mode)."""
    return _acting.get()


def require_acting(role: str, action: str) -> Actor:
    """The user on whose behalf this call runs, if their role includes ``role``; else
    PermissionError saying that ``action`` needs it. For a rule that depends on what a call
    would do (an import that would create a project needs an admin), checked where it is done."""
    who = _acting.get()
    if not who.may(role):
        raise PermissionError(
            f"{who.name} is a {who.role}: {action} needs the {role} role. Nothing was changed."
        )
    return who


def hash_password(password: str) -> str:
    if len(password) < MIN_PASSWORD:
        raise ValueError(f"A password needs at least {MIN_PASSWORD} characters.")
    return _hasher.hash(password)


def add_user(db: Database, name: str, role: str, password: str, *, actor: str = "") -> Actor:
    """A new account, recorded in the security log as ``added`` by ``actor`` (in the same
    transaction). The name of a removed user is refused: :func:`app.services.projects.accounts.restore_user`
    brings that user back on purpose."""
    hashed = hash_password(password)
    with db.write(ACCOUNTS) as s:  # the name is looked up first
        user = create_user(s, name, role, hashed)
        record_event(s, "added", user.name, actor=actor, detail=f"role {user.role}")
        return Actor(user.id, user.name, user.role)


def ensure_admin(db: Database, password: str | None) -> str | None:
    """Create the first admin (``admin``) when there is none. Returns the generated password to
    show once, or None when one was given or an admin exists."""
    with db.session() as s:
        if count_admins(s):
            return None
    generated = None if password else secrets.token_urlsafe(12)
    add_user(db, "admin", "admin", password or generated or "", actor="first start")
    return generated


@cache
def _dummy_hash() -> str:
    """A hash of no one's password, with the same parameters: what an unknown name is checked
    against, so it costs the same time as a known one."""
    return _hasher.hash(secrets.token_urlsafe(16))


def check_login(db: Database, name: str, password: str) -> bool:
    """True when ``name`` is an active user and ``password`` theirs. One argon2 verification
    every time (against a dummy hash for an unknown, locked or removed name): run it off the
    event loop (:mod:`app.perimeter.sign_in`).

    Example:
        >>> check_login(db, "nobody", "a password")  # doctest: +SKIP
        False
    """
    stored = None
    try:
        with db.session() as s:
            stored = active_user(s, name).password_hash
    except (StorageError, PermissionError):
        pass
    try:
        ok = _hasher.verify(stored or _dummy_hash(), password) and stored is not None
    except (VerificationError, InvalidHashError):
        ok = False
    if not ok:
        logger.info("failed sign-in for %r", name)
    return ok


def session_ok(db: Database, name: str, signed_in_at: datetime) -> bool:
    """Whether a browser session of ``name`` that signed in at ``signed_in_at`` (UTC) still
    counts: the user exists, is active, and neither their password changed nor were they locked
    since."""
    try:
        with db.session() as s:
            user = active_user(s, name)
            changed = user.credentials_changed_at
    except (StorageError, PermissionError):
        return False
    return changed is None or signed_in_at > changed


def token_hash(token: str) -> str:
    """The sha256 (hex) of an API token: what the users table keeps instead of the token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def issue_token(db: Database, name: str, *, actor: str = "") -> str:
    """A new API token for user ``name``, to show once: only its hash is stored, and it replaces
    the user's earlier token (which stops working at once). Recorded in the security log as
    ``token_issued`` by ``actor`` (never the token)."""
    token = "is_" + secrets.token_urlsafe(32)
    with db.write(ACCOUNTS) as s:  # read, then write: the write lock from the start
        had = get_user(s, name).api_token_hash is not None
        set_token_hash(s, name, token_hash(token))
        detail = "it replaces the earlier token" if had else ""
        record_event(s, "token_issued", name, actor=actor, detail=detail)
    return token


def token_actor(db: Database, token: str) -> Actor:
    """The user an API token belongs to (their current role); PermissionError when it is
    nobody's (unknown, replaced or revoked)."""
    with db.session() as s:
        try:
            user = user_by_token_hash(s, token_hash(token.strip()))
        except NotFoundError as exc:
            raise PermissionError(str(exc)) from exc
        return Actor(user.id, user.name, user.role)


def actor(
    db: Database, multi_user: bool, username: str | None, *, s: Session | None = None
) -> Actor:
    """The acting user: the local admin in single-user mode (``multi_user`` off), else the
    signed-in user (looked up in ``s`` when given)."""
    if not multi_user:
        return LOCAL
    if not username:
        raise PermissionError("Sign in first.")
    if s is None:
        with db.session() as own:
            return actor(db, multi_user, username, s=own)
    try:
        user = active_user(s, username)
    except NotFoundError as exc:
        raise PermissionError(f"Unknown user {username!r}.") from exc
    return Actor(user.id, user.name, user.role)


def require(
    db: Database, multi_user: bool, username: str | None, role: str, *, s: Session | None = None
) -> Actor:
    """The acting user if their role includes ``role``; else PermissionError with the reason
    (looked up in ``s`` when given, for a caller resolving more in one session)."""
    who = actor(db, multi_user, username, s=s)
    if not who.may(role):
        raise PermissionError(
            f"{who.name} is a {who.role}: this needs the {role} role. Nothing was changed."
        )
    return who


@contextmanager
def acting_as(who: Actor) -> Iterator[Actor]:
    """Within the block, writes are recorded as ``who``'s (the audit log's user)."""
    token = _acting.set(who)
    try:
        yield who
    finally:
        _acting.reset(token)
