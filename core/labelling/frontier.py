"""The labelling queue's scores of every candidate, kept up to date piece by piece (issue 72
item 1): a project of 250,000 rows cannot be scored again at every key, and scoring only the
first 5,000 rows of the file left the rest out of every order.

A :class:`Frontier` holds, for each candidate (an unlabelled row with a vector in one space), its
*margin* (the live Predictor's top score minus the runner-up's: most uncertain first) and its
*cover* (its similarity to the nearest labelled example: least like anything labelled first),
with the pool revision each was computed at. What changes them is what was just labelled: a new
example moves the margins of the rows near it, and raises the cover of every row by at most its
similarity to it. So an order refreshes, exactly, the rows an order can pick from (the
``n`` smallest margins, the ``n`` least covered) and the neighbours of the new labels (found in
the row index), and leaves the rest to a full pass in the background (:meth:`stale`): a row
outside the frontier only moves away from it when examples are added, so it is never wrongly
left out for long.

Example:
    >>> f = Frontier()
    >>> f.put(np.array([7, 8, 9]), np.array([0.5, 0.1, 0.3]), np.array([0.2, 0.9, 0.4]), 1)
    >>> f.smallest_margins(2).tolist(), f.least_covered(1).tolist()
    ([8, 9], [7])
    >>> f.raise_cover(np.array([7]), np.array([0.95]))
    >>> f.least_covered(1).tolist()
    [9]
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from core.portable import normalise
from core.retrieval.rule import rank

if TYPE_CHECKING:
    from core.retrieval.predictor import Predictor


def margins(predictor: Predictor, vectors: np.ndarray) -> np.ndarray:
    """Each vector's top score minus the runner-up's, as the ``predictor`` ranks them (its
    anchors, ``k`` and rule), from every intent's score at once
    (:meth:`~core.retrieval.predictor.Predictor.score_matrix`, 3x faster than ranking 2,500
    candidates; 1.0 without a runner-up, 0.0 with no intent)."""
    if not len(vectors):
        return np.zeros(0, dtype=np.float32)
    return np.asarray(rank(predictor.score_matrix(vectors)).margins, dtype=np.float32)


def cover(pool: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """Each vector's similarity to its nearest labelled example (``pool``: their unit vectors;
    -1 with none), as one product.

    Example:
        >>> cover(np.array([[1.0, 0.0]]), np.array([[0.6, 0.8], [0.0, 2.0]])).tolist()
        [0.6000000238418579, 0.0]
    """
    if not len(vectors):
        return np.zeros(0, dtype=np.float32)
    if not len(pool):
        return np.full(len(vectors), -1.0, dtype=np.float32)
    sims = normalise(np.asarray(vectors, dtype=np.float32)) @ np.asarray(pool, np.float32).T
    return sims.max(axis=1).astype(np.float32)


class Frontier:
    """Margins and covers of the candidates by row id (see the module). Not thread-safe: its
    owner holds a lock around it."""

    def __init__(self) -> None:
        self._pos: dict[int, int] = {}
        self.ids = np.zeros(0, dtype=np.int64)
        self.margin = np.zeros(0, dtype=np.float32)
        self.cover = np.zeros(0, dtype=np.float32)
        self.revision = np.zeros(0, dtype=np.int64)  # the pool revision each was scored at
        self.live = np.zeros(0, dtype=bool)  # still a candidate
        self.seen: dict[int, tuple[str, tuple[str, ...]]] = {}  # the pool as last applied

    def __len__(self) -> int:
        return int(self.live.sum())

    def __contains__(self, row_id: object) -> bool:
        pos = self._pos.get(row_id) if isinstance(row_id, int) else None
        return pos is not None and bool(self.live[pos])

    def put(self, ids: np.ndarray, margins: np.ndarray, cover: np.ndarray, revision: int) -> None:
        """Set the scores of candidates (new ones are added)."""
        ids = np.asarray(ids, dtype=np.int64)
        new = [i for i in ids.tolist() if i not in self._pos]
        if new:
            start = len(self.ids)
            self._pos.update({i: start + n for n, i in enumerate(new)})
            grow = len(new)
            self.ids = np.concatenate([self.ids, np.asarray(new, dtype=np.int64)])
            self.margin = np.concatenate([self.margin, np.full(grow, np.inf, np.float32)])
            self.cover = np.concatenate([self.cover, np.full(grow, np.inf, np.float32)])
            self.revision = np.concatenate([self.revision, np.full(grow, -1, np.int64)])
            self.live = np.concatenate([self.live, np.ones(grow, dtype=bool)])
        pos = self.positions(ids)
        self.margin[pos] = margins
        self.cover[pos] = cover
        self.revision[pos] = revision
        self.live[pos] = True

    def positions(self, ids: Iterable[int]) -> np.ndarray:
        """Where candidates held sit in the arrays (ids not held are left out)."""
        return np.fromiter((p for i in ids if (p := self._pos.get(int(i))) is not None), np.int64)

    def drop(self, ids: Iterable[int]) -> None:
        """Candidates that are not any more (labelled, deleted): never picked again unless
        :meth:`put` again."""
        self.live[self.positions(ids)] = False

    def _held(self, ids: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The positions of those of ``ids`` held, and their ``values``."""
        keep = np.array([int(i) in self._pos for i in ids], dtype=bool)
        return self.positions(np.asarray(ids)[keep]), np.asarray(values)[keep]

    def rescored(self, ids: np.ndarray, margin: np.ndarray, revision: int) -> None:
        """New margins of candidates (those not held any more are left out; covers stay)."""
        pos, margin = self._held(ids, margin)
        self.margin[pos] = margin
        self.revision[pos] = revision

    def raise_cover(self, ids: np.ndarray, similarity: np.ndarray) -> None:
        """A new example is this similar to these candidates: their cover is at least that."""
        pos, similarity = self._held(ids, similarity)
        if len(pos):
            self.cover[pos] = np.maximum(self.cover[pos], similarity.astype(np.float32))

    def _smallest(self, values: np.ndarray, n: int, exclude: Iterable[int]) -> np.ndarray:
        allowed = self.live.copy()
        allowed[self.positions(exclude)] = False
        pos = np.flatnonzero(allowed)
        if not len(pos) or n <= 0:
            return np.zeros(0, dtype=np.int64)
        vals = values[pos]
        if len(pos) > n:
            part = np.argpartition(vals, n - 1)[:n]
            pos, vals = pos[part], vals[part]
        return self.ids[pos[np.argsort(vals, kind="stable")]]

    def smallest_margins(self, n: int, exclude: Iterable[int] = ()) -> np.ndarray:
        """The ids of the ``n`` candidates with the smallest margins, smallest first."""
        return self._smallest(self.margin, n, exclude)

    def least_covered(self, n: int, exclude: Iterable[int] = ()) -> np.ndarray:
        """The ids of the ``n`` candidates least like anything labelled, least first."""
        return self._smallest(self.cover, n, exclude)

    def scores(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The margins and covers of candidates held (in the order of ``ids``)."""
        pos = self.positions(ids)
        return self.margin[pos], self.cover[pos]

    def rescore(
        self, ids: np.ndarray, margin: np.ndarray, cover: np.ndarray, revision: int
    ) -> None:
        """Both scores of candidates again (those not held or not candidates any more are
        left out)."""
        keep = np.array(
            [bool(self.live[self._pos[int(i)]]) if int(i) in self._pos else False for i in ids],
            dtype=bool,
        )
        pos = self.positions(np.asarray(ids)[keep])
        self.margin[pos] = np.asarray(margin)[keep]
        self.cover[pos] = np.asarray(cover)[keep]
        self.revision[pos] = revision

    def oldest(self, n: int, before: int) -> np.ndarray:
        """The ids of up to ``n`` candidates scored before pool revision ``before``, longest
        ago first (a full pass's next chunk)."""
        pos = np.flatnonzero(self.live & (self.revision < before))
        if len(pos) > n:
            pos = pos[np.argsort(self.revision[pos], kind="stable")[:n]]
        return self.ids[pos]

    def stale(self, revision: int) -> int:
        """How many candidates were scored before pool ``revision``."""
        return int((self.live & (self.revision < revision)).sum())

    def pool_changes(
        self, items: dict[int, tuple[str, tuple[str, ...]]]
    ) -> tuple[list[int], list[int]]:
        """What changed in the labelled pool since :attr:`seen`: the ids added or relabelled,
        and those removed; :attr:`seen` becomes ``items``."""
        added = [i for i, item in items.items() if self.seen.get(i) != item]
        removed = [i for i in self.seen if i not in items]
        self.seen = dict(items)
        return added, removed
