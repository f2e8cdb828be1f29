"""Accounts, for an admin: remove, restore, lock, unlock, a new password, a role, revoking a token;
each recorded in the security log with who did it (adding a user and issuing a token are
:func:`app.access.auth.add_user` and :func:`app.access.auth.issue_token`, recorded the same way). A removed or locked user's browser sessions and API token stop at their next
request (every request checks its user: :mod:`app.perimeter.http_guard`, :mod:`app.api.gate`).

Example:
    >>> remove_user(serving_state.db, "dana", actor="cli:root")  # doctest: +SKIP
    >>> [e["action"] for e in security_log(serving_state.db)][:1]  # doctest: +SKIP
    ['removed']
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from app.access.auth import Actor, current_actor, hash_password
from core.errors import logged
from storage.db import ACCOUNTS, Database
from storage.users import (
    get_user,
    record_event,
    security_events,
    set_password_hash,
    set_status,
    set_token_hash,
    sign_ins_since,
)
from storage.users import restore_user as store_restore
from storage.users import security_actions as store_actions
from storage.users import set_role as store_role

logger = logging.getLogger(__name__)
DENIED_PER_MINUTE = 30  # denied calls recorded per user (or address) and minute
# What the security log records, by kind: to filter it by (the UI, the CLI's audit).
ACTIONS = (
    *("signed_in", "sign_in_failed", "sign_in_held", "signed_out", "denied"),
    *("added", "removed", "restored", "locked", "unlocked", "password", "role"),
    *("token_issued", "token_revoked", "member", "member_removed", "project_created"),
    *("exported", "report_built", "bundle_exported", "bundle_opened"),
)
COLUMNS = ("at", "action", "user", "actor", "address", "detail")


def remove_user(db: Database, name: str, *, actor: str) -> None:
    """Remove ``name``: their password, token and sessions end; their past edits keep their name."""
    with db.write(ACCOUNTS) as s:
        set_status(s, name, "removed")
        record_event(s, "removed", name, actor=actor)


def restore_user(
    db: Database, name: str, password: str, *, actor: str, role: str | None = None
) -> str:
    """Bring a removed user back on purpose (``users add`` refuses a removed user's name): the
    same account, so their past edits are theirs again, with a new password, no API token, and
    the role they had unless ``role`` says. Returns their role."""
    hashed = hash_password(password)
    with db.write(ACCOUNTS) as s:
        user = store_restore(s, name, hashed, role)
        record_event(s, "restored", user.name, actor=actor, detail=f"role {user.role}")
        return user.role


def lock_user(db: Database, name: str, *, actor: str, locked: bool = True) -> None:
    """Lock ``name`` (no sign-in, session or token until unlocked), or unlock them."""
    with db.write(ACCOUNTS) as s:
        set_status(s, name, "locked" if locked else "active")
        record_event(s, "locked" if locked else "unlocked", name, actor=actor)


def role_of(db: Database, name: str) -> str:
    """``name``'s role (NotFoundError: no such user)."""
    with db.session() as s:
        return get_user(s, name).role


def set_role(db: Database, name: str, role: str, *, actor: str) -> None:
    """Give ``name`` a new role (the last admin cannot stop being one); in effect at their next
    request."""
    with db.write(ACCOUNTS) as s:
        before = get_user(s, name).role
        store_role(s, name, role)
        record_event(s, "role", name, actor=actor, detail=f"{before} -> {role}")


def revoke_token(db: Database, name: str, *, actor: str) -> None:
    """End ``name``'s API token (their browser sessions go on); a new one comes from
    :func:`app.access.auth.issue_token`."""
    with db.write(ACCOUNTS) as s:
        set_token_hash(s, name, None)
        record_event(s, "token_revoked", name, actor=actor)


def set_password(db: Database, name: str, password: str, *, actor: str) -> None:
    """A new password for ``name``; their sessions signed in with the old one end."""
    hashed = hash_password(password)
    with db.write(ACCOUNTS) as s:
        set_password_hash(s, name, hashed)
        record_event(s, "password", name, actor=actor)


def sign_in_held(db: Database, what: str, name: str, address: str) -> None:
    """Record that sign-ins were held back by the rate limit (``what``: "name from this
    address", "address" or "name")."""
    with db.session() as s:
        record_event(s, "sign_in_held", name, address=address, detail=f"too many failures: {what}")


def signed_in(db: Database, name: str, address: str) -> None:
    """Record a successful sign-in and where it came from."""
    with db.session() as s:
        record_event(s, "signed_in", name, address=address)


def sign_in_failed(db: Database, name: str, address: str) -> None:
    """Record a wrong name or password and where it came from."""
    with db.session() as s:
        record_event(s, "sign_in_failed", name, address=address)


def recent_sign_ins(db: Database, within_s: float) -> list[tuple[str, str, float]]:
    """(name, address, when: seconds since the epoch) of the successful sign-ins within the last
    ``within_s`` seconds, newest first: the sign-in limits' known addresses after a restart."""
    since = datetime.now(UTC).replace(tzinfo=None) - timedelta(seconds=within_s)
    with db.session() as s:
        return [
            (e.user_name, e.address, e.created_at.replace(tzinfo=UTC).timestamp())
            for e in sign_ins_since(s, since)
            if e.address
        ]


def signed_out(db: Database, name: str, address: str) -> None:
    """Record a sign-out and where it came from."""
    with db.session() as s:
        record_event(s, "signed_out", name, address=address)


def record(db: Database, action: str, detail: str, *, who: Actor | None = None) -> None:
    """Record what ``who`` (the acting user by default) did that the security log keeps: an
    export, a report built, a bundle exported or opened, a project created. A failure to write
    is logged, never the caller's: the action itself is done."""
    who = who or current_actor()
    try:
        with db.session() as s:
            record_event(s, action, who.name, actor=who.name, detail=detail)
    except Exception:
        logged(logger, "could not write %s to the security log", action)


class _DeniedLimit:
    """At most ``per_minute`` denied calls recorded per source (a user, else an address) each
    minute: a flood of refused calls must not become a flood of writes (the first ones say
    who and what)."""

    def __init__(self, per_minute: int = DENIED_PER_MINUTE) -> None:
        self.per_minute = per_minute
        self._counts: dict[tuple[str, int], int] = {}
        self._lock = threading.Lock()

    def admit(self, source: str) -> bool:
        minute = int(time.time() // 60)
        with self._lock:
            if len(self._counts) > 10_000:
                self._counts = {k: n for k, n in self._counts.items() if k[1] == minute}
            n = self._counts.get((source, minute), 0) + 1
            self._counts[(source, minute)] = n
            return n <= self.per_minute


_DENIED = _DeniedLimit()


def denied(db: Database, user: str, address: str, detail: str) -> None:
    """Record a refused call (401, 403 or 404 of a REST call, a Gradio route, an upload or a
    download; a UI event naming files it did not upload), at most :data:`DENIED_PER_MINUTE` a
    minute per user (or address, without one)."""
    if not _DENIED.admit(user or address):
        return
    try:
        with db.session() as s:
            record_event(s, "denied", user, address=address, detail=detail)
    except Exception:
        logged(logger, "could not write a denied call to the security log")


def security_log(
    db: Database, limit: int = 100, *, user: str | None = None, action: str | None = None
) -> list[dict[str, Any]]:
    """The security log, newest first, as plain rows: at most ``limit``, of ``user`` (what
    happened to them or what they did) and ``action`` when given."""
    with db.session() as s:
        return [
            {
                "at": e.created_at,
                "action": e.action,
                "user": e.user_name,
                "actor": e.actor,
                "address": e.address,
                "detail": e.detail,
            }
            for e in security_events(s, limit, user=user or None, action=action or None)
        ]


def security_actions(db: Database) -> list[str]:
    """The actions the security log holds (to filter it by)."""
    with db.session() as s:
        return store_actions(s)


def user_names(db: Database, roles: tuple[str, ...] = ("viewer", "designer", "admin")) -> list[str]:
    """The names of the users who are not removed, of these roles, by name."""
    from storage.users import list_users

    with db.session() as s:
        return [u.name for u in list_users(s) if u.status != "removed" and u.role in roles]
