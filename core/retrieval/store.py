"""The labelled pool as vectors: a faiss flat inner-product index of the examples' unit vectors,
their texts and label sets, each intent's prototype and its anchor.

Cosine similarity = inner product of L2-normalised vectors; items are added and removed by id
without a rebuild, and each intent's *prototype* (the normalised mean of its examples' vectors,
with its weighted anchor: :mod:`core.retrieval.anchors`) is kept as a running sum, so it moves
with every label. The store decides nothing: the rule that scores intents from it is
:mod:`core.retrieval.rule`, and :class:`core.retrieval.knn.KnnIndex` joins the two.

Example:
    >>> store = VectorStore(dim=2)
    >>> store.add([1, 2], np.eye(2, dtype=np.float32), ["hi", "bye"], [("greet",), ("bye",)])
    >>> [n.text for n in store.search(np.array([[0.9, 0.1]]), k=1)[0]]
    ['hi']
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Self

import faiss
import numpy as np

from core.portable import anchored, normalise
from core.retrieval.anchors import check_weight
from core.retrieval.scores import Neighbour

__all__ = ["VectorStore", "normalise"]


class VectorStore:
    """A mutable labelled pool in a faiss inner-product index, with its intents' prototypes and
    anchors (what the rule reads: :mod:`core.retrieval.rule`)."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._index = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
        self._items: dict[int, tuple[str, tuple[str, ...]]] = {}
        self._multi = 0  # examples with two or more intents (the multi-label rule's count)
        # per intent: the running sum of its examples' unit vectors and their count (prototypes)
        self._sums: dict[str, np.ndarray] = {}
        self._counts: dict[str, int] = {}
        self._prototypes: tuple[dict[str, int], np.ndarray] | None = None
        # per intent: its anchor's text and unit vector, and the anchors' weight (0: off)
        self._anchors: dict[str, tuple[str, np.ndarray]] = {}
        self.anchor_weight = 0.0
        # held by a reader that needs one consistent view across calls (the rule's scoring)
        self.lock = threading.RLock()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, item_id: int) -> bool:
        return item_id in self._items

    @property
    def intents(self) -> set[str]:
        with self.lock:
            return {name for _, labels in self._items.values() for name in labels}

    def item(self, item_id: int) -> tuple[str, tuple[str, ...]]:
        """A pool item's text and label set."""
        return self._items[int(item_id)]

    def counts(self) -> dict[str, int]:
        """Examples per intent (a copy)."""
        with self.lock:
            return dict(self._counts)

    def label_sets(self) -> list[tuple[str, ...]]:
        """The label set of every example in the pool."""
        with self.lock:
            return [labels for _, labels in self._items.values()]

    def label_counts(self) -> tuple[int, int]:
        """(examples with two or more intents, examples): kept as the pool changes, so the
        multi-label rule costs nothing per prediction."""
        with self.lock:
            return self._multi, len(self._items)

    def add(
        self,
        ids: Sequence[int],
        vectors: np.ndarray,
        texts: Sequence[str],
        labels: Sequence[Sequence[str]],
    ) -> None:
        """Add (or replace) items. Items with no label are ignored: they cannot vote."""
        if not (len(ids) == len(vectors) == len(texts) == len(labels)):
            raise ValueError("ids, vectors, texts and labels must have the same length")
        keep = [i for i, lab in enumerate(labels) if len(lab) > 0]
        with self.lock:
            self.remove(ids)
            if not keep:
                return
            vecs = normalise(vectors[keep])
            if vecs.shape[1] != self.dim:
                raise ValueError(f"vectors have dim {vecs.shape[1]}, index has {self.dim}")
            id_arr = np.asarray([ids[i] for i in keep], dtype=np.int64)
            self._index.add_with_ids(vecs, id_arr)
            for row, i in enumerate(keep):
                names = tuple(sorted(labels[i]))
                self._items[int(ids[i])] = (texts[i], names)
                self._multi += len(set(names)) > 1
                self._move(names, vecs[row], +1)

    def remove(self, ids: Sequence[int]) -> None:
        with self.lock:
            present = [int(i) for i in ids if int(i) in self._items]
            if not present:
                return
            for i in present:
                self._move(self._items[i][1], self._vector(i), -1)
            self._index.remove_ids(np.asarray(present, dtype=np.int64))  # type: ignore[arg-type]
            for i in present:
                self._multi -= len(set(self._items[i][1])) > 1
                del self._items[i]

    def examples(self) -> tuple[list[int], list[str], list[tuple[str, ...]], np.ndarray]:
        """The pool's ids, texts, label sets and stored unit vectors, in one order."""
        with self.lock:
            ids = list(self._items)
            vectors = (
                self._index.reconstruct_batch(np.asarray(ids, dtype=np.int64))
                if ids
                else np.zeros((0, self.dim), dtype=np.float32)
            )
            texts = [self._items[i][0] for i in ids]
            return ids, texts, [self._items[i][1] for i in ids], vectors

    def empty_like(self) -> Self:
        """An empty pool with this one's anchors and anchor weight: what scores a fold of its
        examples as this pool would score a new question (out-of-scope calibration)."""
        other = type(self)(self.dim)
        with self.lock:
            other._anchors = dict(self._anchors)
            other.anchor_weight = self.anchor_weight
        return other

    def _vector(self, item_id: int) -> np.ndarray:
        """The stored unit vector of a pool item."""
        return np.asarray(self._index.reconstruct(int(item_id)), dtype=np.float64)

    def _move(self, names: tuple[str, ...], vector: np.ndarray, sign: int) -> None:
        """Add (``sign=1``) or take away (-1) one example's unit vector from its intents' sums."""
        for name in names:
            count = self._counts.get(name, 0) + sign
            if count <= 0:
                self._sums.pop(name, None)
                self._counts.pop(name, None)
                continue
            total = self._sums.get(name)
            v = np.asarray(vector, dtype=np.float64)
            self._sums[name] = (np.zeros(self.dim) if total is None else total) + sign * v
            self._counts[name] = count
        self._prototypes = None

    def set_anchors(
        self, names: Sequence[str], vectors: np.ndarray, texts: Sequence[str], weight: float
    ) -> None:
        """Replace the intents' anchors (:mod:`core.retrieval.anchors`): each counts in its
        intent's prototype as ``weight`` examples, and an intent without examples is scored by
        its anchor alone. ``weight`` 0 turns anchors off."""
        weight = check_weight(weight)
        if not (len(names) == len(texts) == len(vectors)):
            raise ValueError("names, vectors and texts must have the same length")
        vecs = normalise(vectors).astype(np.float64) if len(names) else np.zeros((0, self.dim))
        if len(names) and vecs.shape[1] != self.dim:
            raise ValueError(f"anchors have dim {vecs.shape[1]}, index has {self.dim}")
        with self.lock:
            self._anchors = {n: (t, v) for n, t, v in zip(names, texts, vecs, strict=True)}
            self.anchor_weight = weight if self._anchors else 0.0
            self._prototypes = None

    def anchors(self) -> dict[str, str]:
        """Intent -> anchor text of the anchors in use (none while the weight is 0)."""
        with self.lock:
            if not self.anchor_weight:
                return {}
            return {n: t for n, (t, _) in self._anchors.items()}

    def anchor_vectors(self) -> tuple[dict[str, str], np.ndarray]:
        """The anchors in use (intent -> text) and their unit vectors, one row each in that
        order (none while the weight is 0): what a bundle of this pool carries."""
        with self.lock:
            names = list(self._anchors) if self.anchor_weight else []
            texts = {n: self._anchors[n][0] for n in names}
            rows = [self._anchors[n][1] for n in names]
            return texts, np.array(rows, dtype=np.float32).reshape(len(names), self.dim)

    def _anchor_sum(self, name: str, total: np.ndarray | None) -> np.ndarray | None:
        """An intent's prototype sum with its weighted anchor (None: neither)."""
        anchor = self._anchors.get(name)
        return anchored(total, None if anchor is None else anchor[1], self.anchor_weight)

    def prototypes(self) -> tuple[dict[str, int], np.ndarray]:
        """Each intent's column and the ``(intents, dim)`` matrix of its prototype (the unit mean
        of its examples, with its weighted anchor), kept up to date by :meth:`add`,
        :meth:`remove` and :meth:`set_anchors`."""
        with self.lock:
            if self._prototypes is None:
                anchored = set(self._anchors) if self.anchor_weight else set()
                names = sorted(set(self._sums) | anchored)
                sums = np.array([self._anchor_sum(n, self._sums.get(n)) for n in names])
                sums = sums.reshape(len(names), self.dim)
                self._prototypes = ({n: j for j, n in enumerate(names)}, normalise(sums))
            return self._prototypes

    def prototype_sims(
        self, q: np.ndarray, exclude_ids: Sequence[int | None] | None
    ) -> tuple[dict[str, int], np.ndarray, list[dict[str, float | None]]]:
        """Cosines of the queries to every prototype, and per query the prototypes of the
        excluded item's intents recomputed without it (None: it was the intent's only example)."""
        col, protos = self.prototypes()
        sims = q @ protos.T
        without: list[dict[str, float | None]] = [{} for _ in range(len(q))]
        for qi, item_id in enumerate(exclude_ids or ()):
            if item_id is None or item_id not in self._items:
                continue
            v = self._vector(int(item_id))
            for name in self._items[item_id][1]:
                n = self._counts[name] - 1
                rest = self._anchor_sum(name, self._sums[name] - v if n > 0 else None)
                if rest is None:
                    without[qi][name] = None
                    continue
                without[qi][name] = float(q[qi] @ normalise(rest)[0])
        return col, sims, without

    def anchor_sims(self, q: np.ndarray, anchors: dict[str, str]) -> dict[str, list[float]]:
        """Per anchored intent, the cosine of each query to its anchor alone."""
        if not anchors:
            return {}
        names = sorted(anchors)
        matrix = np.array([self._anchors[n][1] for n in names], dtype=np.float32)
        sims = (q @ matrix.T).T.tolist()
        return dict(zip(names, sims, strict=True))

    def nearest(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """faiss's ``(queries, min(k, pool))`` similarities and ids of the most similar pool
        items, most similar first (unit ``queries``)."""
        with self.lock:
            n = len(self._items)
            if n == 0 or k < 1 or not len(queries):
                shape = (len(queries), 0)
                return np.zeros(shape, dtype=np.float32), np.zeros(shape, dtype=np.int64)
            return self._index.search(np.ascontiguousarray(queries, dtype=np.float32), min(k, n))

    def search(self, queries: np.ndarray, k: int) -> list[list[Neighbour]]:
        """The ``k`` most similar pool items for each query, most similar first."""
        with self.lock:
            sims, ids = self.nearest(normalise(queries), k)
            return [self.neighbours(row_s, row_i) for row_s, row_i in zip(sims, ids, strict=True)]

    def neighbours(
        self, sims: np.ndarray, ids: np.ndarray, skip: int | None = None
    ) -> list[Neighbour]:
        """One query's row of :meth:`nearest` as neighbours (without the item ``skip``)."""
        out = []
        for sim, item_id in zip(sims.tolist(), ids.tolist(), strict=True):
            if item_id < 0 or item_id == skip:
                continue
            text, labels = self._items[item_id]
            out.append(Neighbour(item_id, text, labels, sim))
        return out
