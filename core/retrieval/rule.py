"""The decision rule, written once: every intent's score for many questions at once
(:func:`score`), and the one ranking of those scores (:func:`rank`: the top intent, its score, the
margin to the runner-up, whether an anchor alone made it).

An intent's score (:data:`~core.retrieval.scores.DEFAULT_RULE`, ``"nearest+prototype"``) is
:func:`~core.retrieval.scores.combine` of its nearest example's cosine (the mean of its ``k``
nearest, nearest first) and its prototype's; under ``"nearest"`` the first alone. An intent
without examples whose anchor takes part (cold start) is scored by its anchor alone. With
``exclude_ids`` a pool item is scored without itself (out of its intents' prototypes too).

Which examples are looked at: the ``depth`` most similar ones (faiss's search; an intent with no
example among them is unranked, ``-inf``), or with ``depth=None`` every example (the dense score
of a whole held-out fold). Everything that decides or counts goes through here:
:meth:`KnnIndex.classify <core.retrieval.knn.KnnIndex.classify>` explains a question from these
scores, :func:`tops` and :meth:`~core.retrieval.knn.KnnIndex.score_matrix` are these scores.

Scores are float64, summed in the order of the neighbours, ties broken by intent name (the
columns are in name order and every ranking is a stable sort of them).

Example:
    >>> from core.retrieval.store import VectorStore
    >>> store = VectorStore(dim=2)
    >>> store.add([1, 2], np.eye(2, dtype=np.float32), ["hi", "bye"], [("greet",), ("bye",)])
    >>> found = rank(score(store, np.array([[0.9, 0.1]], dtype=np.float32), depth=10))
    >>> found.intents, round(float(found.margins[0]), 3)
    (['greet'], 0.883)
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from core.portable import combine, nearest_of_hits, normalise, order, top_two
from core.retrieval.scores import DEFAULT_RULE, NEAREST_PROTOTYPE, check_rule
from core.retrieval.store import VectorStore

__all__ = ["BLOCK", "Scores", "Tops", "order", "rank", "score", "tops"]

# Questions scored at a time by :func:`tops` (faiss's own block of queries): the search results
# of a block, ~12 bytes per neighbour, are what is held in memory (4,096 x 201: 10 MB).
BLOCK = 4096


@dataclass(frozen=True)
class Scores:
    """Every intent's score for every question, and the parts behind it, ``(questions, intents)``
    each: ``score`` (``-inf``: unranked), ``nearest`` and ``prototype`` (NaN: none), ``anchor``
    (the cosine to the intent's anchor; NaN: none in use), ``size`` (examples behind the
    prototype). ``cold``: the intents scored by their anchor alone. ``sims``/``ids``: the
    neighbours looked at (faiss's search; empty with every example looked at)."""

    intents: list[str]
    score: np.ndarray
    nearest: np.ndarray
    prototype: np.ndarray
    anchor: np.ndarray
    size: np.ndarray
    cold: frozenset[str]
    sims: np.ndarray
    ids: np.ndarray


@dataclass(frozen=True)
class Tops:
    """Per question: the top intent (None: nothing ranked), its score and the margin to the
    runner-up (1.0 without one, 0.0 with nothing ranked), and whether its anchor alone scored it
    (cold start), as a ``Prediction`` gives them."""

    intents: list[str | None]
    scores: np.ndarray
    margins: np.ndarray
    cold: list[bool]


def rank(scores: Scores | tuple[Sequence[str], np.ndarray], cold: Collection[str] = ()) -> Tops:
    """The top intent, its score and margin of each row of ``scores`` (a :class:`Scores`, or
    intents and a ``(questions, intents)`` matrix with ``cold`` the intents scored by their
    anchor alone).

    Example:
        >>> found = rank((["a", "b", "c"], np.array([[0.2, 0.5, 0.5], [-np.inf, 0.4, -np.inf]])))
        >>> found.intents, found.margins.tolist()
        (['b', 'b'], [0.0, 1.0])
    """
    if isinstance(scores, Scores):
        names, matrix, cold = scores.intents, scores.score, scores.cold
    else:
        names, matrix = list(scores[0]), np.asarray(scores[1], dtype=np.float64)
    n_q = len(matrix)
    if not names:
        return Tops([None] * n_q, np.zeros(n_q), np.zeros(n_q), [False] * n_q)
    best, top, margins, found = top_two(matrix)
    picked = zip(best.tolist(), found.tolist(), strict=True)
    intents = [names[j] if ok else None for j, ok in picked]
    return Tops(intents, top, margins, [name is not None and name in cold for name in intents])


def score(
    store: VectorStore,
    queries: np.ndarray,
    *,
    k: int = 1,
    depth: int | None = None,
    exclude_ids: Sequence[int | None] | None = None,
    rule: str = DEFAULT_RULE,
) -> Scores:
    """Every intent's score for each query by ``rule`` (see the module doc), from the ``depth``
    most similar examples (None: every example)."""
    if k < 1:
        raise ValueError("k must be at least 1")
    check_rule(rule)
    q = normalise(queries)
    n_q = len(q)
    with store.lock:  # one consistent view of the pool
        counts = store.counts()
        anchors = store.anchors()
        cold = sorted(n for n in anchors if counts.get(n, 0) == 0)
        names = sorted(set(counts) | set(cold))
        at = {name: j for j, name in enumerate(names)}
        excluded = np.array(
            [-1 if e is None or e not in store else int(e) for e in exclude_ids]
            if exclude_ids is not None
            else np.full(n_q, -1),
            dtype=np.int64,
        )
        if depth is None:
            sims, ids = np.zeros((n_q, 0), np.float32), np.zeros((n_q, 0), np.int64)
            nearest = _nearest_of_all(store, q, at, excluded, k)
        else:
            sims, ids = store.nearest(normalise(q), depth)  # as KnnIndex.search looks them up
            nearest = _nearest_of_hits(store, sims, ids, at, excluded, k)
        proto = np.full((n_q, len(names)), np.nan)
        size = np.tile(np.array([counts.get(n, 0) for n in names], dtype=np.int64), (n_q, 1))
        for qi, e in enumerate(excluded.tolist()):
            if e >= 0:
                size[qi, [at[n] for n in store.item(e)[1]]] -= 1
        if rule == NEAREST_PROTOTYPE and len(store):
            col, sims_p, without = store.prototype_sims(q, exclude_ids)
            cols = np.array([col.get(n, -1) for n in names], dtype=np.int64)
            proto[:, cols >= 0] = sims_p[:, cols[cols >= 0]].astype(np.float64)
            for qi, changed in enumerate(without):  # the excluded example's intents, without it
                for name, value in changed.items():
                    proto[qi, at[name]] = np.nan if value is None else value
        anchor = np.full((n_q, len(names)), np.nan)
        for name, values in store.anchor_sims(q, anchors).items():
            anchor[:, at[name]] = values
    scores = np.where(np.isnan(proto), nearest, combine(nearest, np.nan_to_num(proto)))
    proto[~np.isfinite(nearest)] = np.nan
    for name in cold:  # an intent without examples: its anchor alone
        scores[:, at[name]] = anchor[:, at[name]]
    return Scores(names, scores, nearest, proto, anchor, size, frozenset(cold), sims, ids)


def _nearest_of_hits(
    store: VectorStore,
    sims: np.ndarray,
    ids: np.ndarray,
    at: dict[str, int],
    excluded: np.ndarray,
    k: int,
) -> np.ndarray:
    """Per query and intent, the mean of its ``k`` nearest among the hits, nearest first
    (``-inf``: none among them; :func:`core.portable.nearest_of_hits`), each query's excluded
    example left out. Every hit votes for each of its intents."""
    valid = np.where(ids == excluded[:, None], -1, ids)

    def columns(uniq: list[int]) -> list[list[int]]:
        return [[at[name] for name in store.item(i)[1]] for i in uniq]

    return nearest_of_hits(sims, valid, columns, len(at), k)


def _nearest_of_all(
    store: VectorStore, q: np.ndarray, at: dict[str, int], excluded: np.ndarray, k: int
) -> np.ndarray:
    """Per query and intent, the mean of its ``k`` nearest examples in the whole pool (``-inf``:
    none), as one product with the pool's vectors."""
    ids, _, sets, vectors = store.examples()
    sims = (q @ vectors.T).astype(np.float64)
    position = {item_id: j for j, item_id in enumerate(ids)}
    for qi, e in enumerate(excluded.tolist()):
        if e >= 0:
            sims[qi, position[e]] = -np.inf
    examples: dict[int, list[int]] = {}
    for j, labels in enumerate(sets):
        for name in labels:
            examples.setdefault(at[name], []).append(j)
    out = np.full((len(q), len(at)), -np.inf)
    for col, members in examples.items():
        part = sims[:, members]
        if k == 1:
            out[:, col] = part.max(axis=1)
            continue
        best = -np.sort(-part, axis=1)[:, :k]
        real = np.isfinite(best)
        count = real.sum(axis=1)
        total = np.where(real, best, 0.0).sum(axis=1)
        out[:, col] = np.where(count > 0, total / np.maximum(count, 1), -np.inf)
    return out


def tops(
    store: VectorStore,
    queries: np.ndarray,
    *,
    k: int = 1,
    depth: int | None = None,
    exclude_ids: Sequence[int | None] | None = None,
    rule: str = DEFAULT_RULE,
) -> Tops:
    """:func:`rank` of :func:`score`, :data:`BLOCK` questions at a time: the top intent, score
    and margin of many questions without their evidence (an evaluation, a parity check, a map)."""
    parts = [
        rank(
            score(
                store,
                queries[start : start + BLOCK],
                k=k,
                depth=depth,
                exclude_ids=None if exclude_ids is None else exclude_ids[start : start + BLOCK],
                rule=rule,
            )
        )
        for start in range(0, len(queries), BLOCK)
    ]
    if len(parts) == 1:
        return parts[0]
    return Tops(
        [name for p in parts for name in p.intents],
        np.concatenate([p.scores for p in parts]) if parts else np.zeros(0),
        np.concatenate([p.margins for p in parts]) if parts else np.zeros(0),
        [c for p in parts for c in p.cold],
    )
