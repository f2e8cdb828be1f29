"""Where storage asks who may change an item: every function that changes an utterance that
already exists (its intents, split or text, deleting it, an import's relabel, an undo) calls
:func:`check` (or :func:`refused`, to leave protected rows out) before it writes.

The rule is not storage's: the app installs an :class:`ItemGuard` on the session it opens for a
change (:func:`install`; :func:`app.access.writing`), which knows the acting user, their role in
the project and what the change is for. A session with no guard (storage's own tests, a
migration) changes anything.

Example:
    >>> from storage.db import Database
    >>> db = Database("sqlite://")
    >>> with db.session() as s:
    ...     refused(s, 1, [5, 6])  # no guard installed: nothing refused
    {}
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

from sqlalchemy.orm import Session

from storage.errors import StorageError

_KEY = "item_guard"


class ItemLockedError(StorageError, PermissionError):
    """The acting user may not change this item now (a team's item, a dispute, an accepted
    answer); nothing was changed."""


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
    s.info[_KEY] = guard


def refused(
    s: Session,
    project_id: int,
    utterance_ids: Sequence[int],
    undo_of: Collection[int | None] | None = None,
) -> dict[int, str]:
    """The items of ``utterance_ids`` the session's guard refuses, with why ({}: no guard)."""
    guard: ItemGuard | None = s.info.get(_KEY)
    if guard is None or not utterance_ids:
        return {}
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
