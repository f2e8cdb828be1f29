"""Reading many utterances by id: a few statements for any number of ids.

Ids go in slices of :data:`SLICE` (far below SQLite's limit on bound parameters), and only the
primary key selects them: with the project's id in the same ``WHERE``, SQLite searched the
project's (project, text) index instead and read the whole project once per slice (10,000 ids of
a 10,000-row project: 0.5 s instead of 0.03 s); the project is checked on the rows found.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from storage.projects import _labels_of
from storage.slices import SLICE, slices
from storage.tables import Utterance

__all__ = ["SLICE", "labels_of", "slices", "utterances_by_id"]


def utterances_by_id(
    s: Session, project_id: int, ids: Sequence[int], *columns: Any
) -> dict[int, Any]:
    """Id -> the row of ``columns`` (after the id) of each of the project's utterances among
    ``ids`` (ids of other projects, or none, are left out)."""
    out: dict[int, Any] = {}
    for part in slices(list(dict.fromkeys(ids))):
        rows = s.execute(
            select(Utterance.id, Utterance.project_id, *columns).where(Utterance.id.in_(list(part)))
        )
        out.update((r[0], r) for r in rows if r[1] == project_id)
    return out


def labels_of(s: Session, ids: Sequence[int]) -> dict[int, list[str]]:
    """Utterance id -> its intents (sorted names), for any number of ids."""
    return _labels_of(s, list(dict.fromkeys(ids)))
