"""The top intent and margin of many questions at once, exactly as
:meth:`~core.retrieval.knn.KnnIndex.classify` ranks them, without building its evidence.

``classify`` explains a question: for each of the ~200 neighbours it looks at it makes a
:class:`~core.retrieval.knn.Neighbour`, and for each intent among them an
:class:`~core.retrieval.knn.IntentScore` with its examples: about 4 ms a question in Python. An
evaluation of 3,000 test questions, a parity check or a map of every utterance needs only the
top intent, its score and the margin to the runner-up; :func:`tops` computes those from the same
numbers in a few array operations: the same faiss search (the neighbours ``classify`` looks at),
the same prototype and anchor cosines (the index's own methods), combined by the same rule in
float64 as ``classify``'s Python floats are, ties broken by name as its sort does. The results
are equal, not close: ``tests/core/test_tops.py`` pins them against ``classify`` (leave-one-out,
multi-intent examples, cold anchors, exact matches, both rules). With ``k > 1`` (the mean of an
intent's ``k`` nearest, summed in order) it ranks through ``classify`` itself, a slice of
questions at a time.

Example:
    >>> import numpy as np
    >>> from core.retrieval.knn import KnnIndex
    >>> idx = KnnIndex(dim=2)
    >>> idx.add([1, 2], np.eye(2, dtype=np.float32), ["hi", "bye"], [("greet",), ("bye",)])
    >>> found = tops(idx, np.array([[0.9, 0.1]], dtype=np.float32))
    >>> found.intents, round(float(found.margins[0]), 3)
    (['greet'], 0.883)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core.retrieval.knn import EXACT, NEAREST_PROTOTYPE, KnnIndex, check_rule, normalise

# Questions ranked through ``classify`` at a time when ``k > 1`` (bounds the evidence in memory).
SLICE = 512
# Questions scored at a time otherwise (faiss's own block of queries): the search results of a
# block, ~12 bytes per neighbour, are what is held in memory (4,096 x 201: 10 MB).
BLOCK = 4096


@dataclass(frozen=True)
class Tops:
    """Per question: the top intent (None: nothing ranked), its score and the margin to the
    runner-up (1.0 without one, 0.0 with nothing ranked), as a ``Prediction`` would give them."""

    intents: list[str | None]
    scores: np.ndarray
    margins: np.ndarray


def tops(
    index: KnnIndex,
    queries: np.ndarray,
    *,
    k: int = 1,
    show: int = 0,
    depth: int = 200,
    exclude_ids: Sequence[int | None] | None = None,
    rule: str = NEAREST_PROTOTYPE,
) -> Tops:
    """The top intent, score and margin of each query by ``index.classify(queries, ...)`` with
    the same arguments (``show`` only widens the search, as it does there)."""
    if k < 1:
        raise ValueError("k must be at least 1")
    check_rule(rule)
    if k > 1:
        return _through_classify(index, queries, k, show, depth, exclude_ids, rule)
    if len(queries) > BLOCK:
        parts = [
            tops(
                index,
                queries[start : start + BLOCK],
                show=show,
                depth=depth,
                exclude_ids=None if exclude_ids is None else exclude_ids[start : start + BLOCK],
                rule=rule,
            )
            for start in range(0, len(queries), BLOCK)
        ]
        return Tops(
            [name for p in parts for name in p.intents],
            np.concatenate([p.scores for p in parts]),
            np.concatenate([p.margins for p in parts]),
        )
    q = normalise(queries)
    n_q = len(q)
    with index._lock:  # one consistent view of the pool, as classify reads it
        n = len(index._items)
        width = min(max(depth, show, k) + 1, n)
        if n:
            sims, ids = index._index.search(normalise(q), width)  # as KnnIndex.search
        else:
            sims = np.zeros((n_q, 0), dtype=np.float32)
            ids = np.zeros((n_q, 0), dtype=np.int64)
        col: dict[str, int] = {}
        proto = np.zeros((n_q, 0), dtype=np.float32)
        without: list[dict[str, float | None]] = [{} for _ in range(n_q)]
        if (rule == NEAREST_PROTOTYPE and index._items) or index.anchor_weight:
            col, proto, without = index._prototype_sims(q, exclude_ids)
        counts = dict(index._counts)
        anchors = index.anchors()
        anchor_sims = index._anchor_sims(q, anchors)
        labels_of = {i: labels for i, (_, labels) in index._items.items()}
    cold = [a for a in anchors if counts.get(a, 0) == 0]
    names = sorted(set(counts) | set(cold))
    at = {name: j for j, name in enumerate(names)}
    scores = np.full((n_q, len(names)), -np.inf, dtype=np.float64)
    if ids.size:
        valid = ids >= 0
        if exclude_ids is not None:
            excluded = np.array([-1 if e is None else int(e) for e in exclude_ids], dtype=np.int64)
            valid &= ids != excluded[:, None]
        rows, cols = np.nonzero(valid)
        hit_ids = ids[rows, cols]
        hit_sims = sims[rows, cols].astype(np.float64)
        # every hit votes for each of its intents: the intent's nearest similarity among the hits
        uniq, inv = np.unique(hit_ids, return_inverse=True)
        sets = [labels_of[int(i)] for i in uniq.tolist()]
        table = np.full((len(uniq), max((len(s) for s in sets), default=1)), -1, dtype=np.int64)
        for r, labels in enumerate(sets):
            table[r, : len(labels)] = [at[name] for name in labels]
        voted = table[inv.reshape(-1)]
        hr, hc = np.nonzero(voted >= 0)
        np.maximum.at(scores, (rows[hr], voted[hr, hc]), hit_sims[hr])
    ranked = np.isfinite(scores)
    if rule == NEAREST_PROTOTYPE and col:
        # each ranked intent with a prototype: the mean with it, unless the question is the example
        cols_of = np.array([col.get(name, -1) for name in names], dtype=np.int64)
        has = cols_of >= 0
        p = np.full_like(scores, np.nan)
        p[:, has] = proto[:, cols_of[has]].astype(np.float64)
        for qi, changed in enumerate(without):  # the excluded example's intents, without it
            for name, value in changed.items():
                p[qi, at[name]] = np.nan if value is None else value
        mixed = 0.5 * (scores + p)
        use = ranked & ~np.isnan(p) & (scores < EXACT)
        scores = np.where(use, mixed, scores)
    for name in cold:  # an intent without examples: its anchor alone
        scores[:, at[name]] = np.asarray(anchor_sims[name], dtype=np.float64)
    return _pick(names, scores)


def _pick(names: list[str], scores: np.ndarray) -> Tops:
    """The best and second best column of each row (ties: the first name, as sorting by
    (-score, name) does)."""
    n_q = len(scores)
    if not names:
        return Tops([None] * n_q, np.zeros(n_q), np.zeros(n_q))
    best = np.argmax(scores, axis=1)
    top = scores[np.arange(n_q), best]
    rest = scores.copy()
    rest[np.arange(n_q), best] = -np.inf
    second = rest.max(axis=1)
    found = np.isfinite(top)
    margins = np.where(np.isfinite(second), top - second, 1.0)
    margins = np.where(found, margins, 0.0)
    return Tops(
        [names[j] if ok else None for j, ok in zip(best.tolist(), found.tolist(), strict=True)],
        np.where(found, top, 0.0),
        margins,
    )


def _through_classify(
    index: KnnIndex,
    queries: np.ndarray,
    k: int,
    show: int,
    depth: int,
    exclude_ids: Sequence[int | None] | None,
    rule: str,
) -> Tops:
    found, scores, margins = [], [], []
    q = np.asarray(queries)
    for start in range(0, len(q), SLICE):
        part = slice(start, start + SLICE)
        for pred in index.classify(
            q[part],
            k=k,
            show=show,
            depth=depth,
            exclude_ids=None if exclude_ids is None else list(exclude_ids[part]),
            rule=rule,
        ):
            found.append(pred.top)
            scores.append(pred.score)
            margins.append(pred.margin)
    return Tops(found, np.asarray(scores, dtype=np.float64), np.asarray(margins, dtype=np.float64))
