"""Many ids or texts in one query: in slices of :data:`SLICE`, far below every database's limit on
bound parameters (SQLite's smallest, 999 before 3.32; PostgreSQL's 65,535), so no query binds a
variable per row of a project however large it grows (issue 56, row 4: a project past 250,000
rows failed its export and its report with "too many SQL variables").

Example:
    >>> [list(part) for part in slices([1, 2, 3, 4, 5], 2)]
    [[1, 2], [3, 4], [5]]
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

SLICE = 500
_T = TypeVar("_T")


def slices(items: Sequence[_T], size: int = SLICE) -> Iterator[Sequence[_T]]:
    """``items`` in consecutive slices of at most ``size``."""
    for i in range(0, len(items), size):
        yield items[i : i + size]
