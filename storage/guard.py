"""Where storage asks who may change an item: every function that changes an utterance that
already exists (its intents, split or text, deleting it, an import's relabel, an undo) calls
:func:`check` (or :func:`refused`, to leave protected rows out) before it writes.

The rule is not storage's: the app installs an :class:`ItemGuard` on the session it opens for a
change (:func:`install`; :func:`app.access.writing`), which knows the acting user, their role in
the project and what the change is for. A session with no guard refuses every such change
(:class:`NoRuleError`): a write path that forgot the rule fails instead of going through. Whoever
changes items on purpose without a user (storage's own tests, a migration, a bench) says so with
:func:`trusted`.

Example:
    >>> from storage.db import Database
    >>> db = Database("sqlite://")
    >>> with db.session() as s:
    ...     refused(s, 1, [5, 6])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    storage.guard.NoRuleError: No rule decides who may change these items ...
    >>> with db.session() as s:
    ...     trusted(s)
    ...     refused(s, 1, [5, 6])  # a trusted session: nothing refused
    {}
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

from sqlalchemy.orm import Session

from storage.errors import StorageError

KEY = "item_guard"  # where a session keeps its guard (Session.info)


class ItemLockedError(StorageError, PermissionError):
    """The acting user may not change this item now (a team's item, a dispute, an accepted
    answer); nothing was changed."""


class NoRuleError(ItemLockedError):
    """A change of existing items in a session nobody installed a rule on: refused (a write path
    that skipped :func:`app.access.writing`, or a caller that forgot :func:`trusted`)."""


class ItemGuard(Protocol):
    """The app's rule for items, as storage calls it."""

    def refused(
        self,
        s: Session,
        project_id: int,
        utterance_ids: Sequence[int],
        undo_of: Collection[int | None] | None = None,
    ) -> dict[int, str]:
        """Utterance id -> why the acting user may not change it now (those they may: absent).
        ``undo_of``: the change takes back earlier changes by these users (an undo)."""
        ...


def install(s: Session, guard: ItemGuard) -> None:
    """Make ``guard`` decide every item change within ``s``."""
    s.info[KEY] = guard


class _Trusted:
    """The guard of a session that changes items on purpose without a user: refuses nothing."""

    def refused(
        self,
        s: Session,
        project_id: int,
        utterance_ids: Sequence[int],
        undo_of: Collection[int | None] | None = None,
    ) -> dict[int, str]:
        return {}


TRUSTED: ItemGuard = _Trusted()


def trusted(s: Session) -> None:
    """Let ``s`` change any item: for storage's own tests, migrations and benches, which act as
    no user. The app never calls it: its changes go through :func:`app.access.writing`."""
    install(s, TRUSTED)


def refused(
    s: Session,
    project_id: int,
    utterance_ids: Sequence[int],
    undo_of: Collection[int | None] | None = None,
) -> dict[int, str]:
    """The items of ``utterance_ids`` the session's guard refuses, with why (none asked: {}).

    Raises:
        NoRuleError: no guard was installed on ``s`` (not even :func:`trusted`).
    """
    guard: ItemGuard | None = s.info.get(KEY)
    if not utterance_ids:
        return {}
    if guard is None:
        raise NoRuleError(
            "No rule decides who may change these items in this session (a change outside "
            "app.access.writing). Nothing was changed."
        )
    return guard.refused(s, project_id, utterance_ids, undo_of)


def check(
    s: Session,
    project_id: int,
    utterance_ids: Sequence[int],
    undo_of: Collection[int | None] | None = None,
) -> None:
    """Refuse the whole change when the guard refuses any of its items.

    Raises:
        ItemLockedError: the first item's reason (and how many more there are).
    """
    found = refused(s, project_id, utterance_ids, undo_of)
    if not found:
        return
    first = next(iter(found.values()))
    more = f" ({len(found) - 1} more item(s) of this change likewise)" if len(found) > 1 else ""
    raise ItemLockedError(f"{first}{more} Nothing was changed.")
