"""k-nearest-neighbour intent classification over the labelled pool (ConvFiT's inference rule).

The pool *is* the classifier: adding a labelled example changes the next prediction at once.
Cosine similarity = inner product of L2-normalised vectors in a faiss flat index; items are added
and removed by id without a rebuild.

Scores: an intent's score is the mean similarity of its ``k`` nearest examples to the query
(``k=1``: the nearest example, ConvFiT's 1-NN). Every ranked intent keeps the example that decided
its score, so a prediction and its runner-up are both explained by real utterances.

Example:
    >>> idx = KnnIndex(dim=2)
    >>> idx.add([1, 2], np.eye(2, dtype=np.float32), ["hi", "bye"], [("greet",), ("bye",)])
    >>> idx.classify(np.array([[0.9, 0.1]], dtype=np.float32))[0].top
    'greet'
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import faiss
import numpy as np

# Top two intents closer than this are a close call (``ambiguous``), as Rasa flags them.
AMBIGUOUS_MARGIN = 0.05


@dataclass(frozen=True)
class Neighbour:
    """A labelled example found near a query: the evidence behind a score and an explanation."""

    id: int
    text: str
    labels: tuple[str, ...]
    similarity: float

    def to_dict(self) -> dict[str, Any]:
        """The public JSON shape of an example (``labels`` as a list).

        Example:
            >>> Neighbour(3, "hi", ("greet",), 0.5).to_dict()
            {'id': 3, 'text': 'hi', 'labels': ['greet'], 'similarity': 0.5}
        """
        return {
            "id": int(self.id),
            "text": self.text,
            "labels": list(self.labels),
            "similarity": float(self.similarity),
        }


@dataclass(frozen=True)
class IntentScore:
    intent: str
    score: float
    # The intent's nearest example to the query (the evidence for this intent).
    best: Neighbour


@dataclass(frozen=True)
class Prediction:
    intents: list[IntentScore]
    neighbours: list[Neighbour] = field(default_factory=list)

    @property
    def top(self) -> str | None:
        return self.intents[0].intent if self.intents else None

    @property
    def score(self) -> float:
        return self.intents[0].score if self.intents else 0.0

    @property
    def runner_up(self) -> IntentScore | None:
        return self.intents[1] if len(self.intents) > 1 else None

    @property
    def margin(self) -> float:
        """Score of the top intent minus the runner-up's (1.0 when there is no runner-up)."""
        if not self.intents:
            return 0.0
        ru = self.runner_up
        return 1.0 if ru is None else self.intents[0].score - ru.score

    def ambiguous(self, margin: float = AMBIGUOUS_MARGIN) -> bool:
        """Whether the top two intents are within ``margin`` of each other (a close call)."""
        return self.runner_up is not None and self.margin < margin


def normalise(vectors: np.ndarray) -> np.ndarray:
    v = np.ascontiguousarray(vectors, dtype=np.float32)
    if v.ndim == 1:
        v = v[None, :]
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.maximum(norms, 1e-12)


class KnnIndex:
    """A mutable labelled pool in a faiss inner-product index."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._index = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
        self._items: dict[int, tuple[str, tuple[str, ...]]] = {}
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, item_id: int) -> bool:
        return item_id in self._items

    @property
    def intents(self) -> set[str]:
        with self._lock:
            return {name for _, labels in self._items.values() for name in labels}

    def label_sets(self) -> list[tuple[str, ...]]:
        """The label set of every example in the pool."""
        with self._lock:
            return [labels for _, labels in self._items.values()]

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
        with self._lock:
            self.remove(ids)
            if not keep:
                return
            vecs = normalise(vectors[keep])
            if vecs.shape[1] != self.dim:
                raise ValueError(f"vectors have dim {vecs.shape[1]}, index has {self.dim}")
            id_arr = np.asarray([ids[i] for i in keep], dtype=np.int64)
            self._index.add_with_ids(vecs, id_arr)
            for i in keep:
                self._items[int(ids[i])] = (texts[i], tuple(sorted(labels[i])))

    def remove(self, ids: Sequence[int]) -> None:
        with self._lock:
            present = [int(i) for i in ids if int(i) in self._items]
            if not present:
                return
            self._index.remove_ids(np.asarray(present, dtype=np.int64))  # type: ignore[arg-type]
            for i in present:
                del self._items[i]

    def search(self, queries: np.ndarray, k: int) -> list[list[Neighbour]]:
        """The ``k`` most similar pool items for each query, most similar first."""
        q = normalise(queries)
        with self._lock:
            n = len(self._items)
            if n == 0:
                return [[] for _ in range(len(q))]
            sims, ids = self._index.search(q, min(k, n))
            out: list[list[Neighbour]] = []
            for row_s, row_i in zip(sims, ids, strict=True):
                hits = []
                for sim, item_id in zip(row_s, row_i, strict=True):
                    if item_id < 0:
                        continue
                    text, labels = self._items[int(item_id)]
                    hits.append(Neighbour(int(item_id), text, labels, float(sim)))
                out.append(hits)
            return out

    def classify(
        self,
        queries: np.ndarray,
        *,
        k: int = 1,
        show: int = 5,
        depth: int = 200,
        exclude_ids: Sequence[int | None] | None = None,
    ) -> list[Prediction]:
        """Rank intents for each query by the mean similarity of their ``k`` nearest examples.

        Args:
            queries: ``(n, dim)`` vectors.
            k: examples per intent that make its score (1 = nearest neighbour).
            show: how many overall nearest neighbours to return as evidence.
            depth: how many neighbours to look at; intents with no example among them are unranked.
            exclude_ids: per query, a pool id to leave out (leave-one-out scoring of pool items).
        """
        if k < 1:
            raise ValueError("k must be at least 1")
        lists = self.search(queries, max(depth, show, k) + 1)
        preds: list[Prediction] = []
        for qi, hits in enumerate(lists):
            if exclude_ids is not None and exclude_ids[qi] is not None:
                hits = [h for h in hits if h.id != exclude_ids[qi]]
            per_intent: dict[str, list[Neighbour]] = {}
            for h in hits:
                for name in h.labels:
                    per_intent.setdefault(name, []).append(h)
            scored = [  # plain sums: np.mean on a few floats costs more than the search
                IntentScore(name, sum(h.similarity for h in hs[:k]) / len(hs[:k]), hs[0])
                for name, hs in per_intent.items()
            ]
            scored.sort(key=lambda s: (-s.score, s.intent))
            preds.append(Prediction(scored, hits[:show]))
        return preds
