"""The labelling queue's scores of a space's candidates, kept in step with the labelled pool
(issue 72 item 1; the scores: :class:`core.labelling.frontier.Frontier`).

:func:`score_new` scores rows just encoded (their margins by the pool's Predictor, their cover by
its examples); :func:`follow` brings the scores over what was labelled since they were computed,
exactly where an order picks (the ``n`` smallest margins, the ``n`` least covered) and around
each new label (its neighbours in the row index); :func:`rescore_oldest` is one chunk of the
background's full pass, which catches everything else up. The key path calls :func:`follow`;
the background calls all three (:mod:`app.serving.row_encoding`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from app.serving.pools import ProjectPool
from app.serving.row_spaces import ProjectRows, RowSpace
from core.encoding.cache import EmbeddingCache
from core.labelling.frontier import cover, margins

# The smallest margins and the least covered candidates whose scores are refreshed after new
# labels (an order picks among them: app.services.queue.queue_order.MAX_CANDIDATES).
FOLLOWED = 300
# The nearest candidates of each new label whose scores an order refreshes.
NEIGHBOURS = 64
# New labels past this many in one refresh: the most recent are followed, a full pass the rest.
MOST_FOLLOWED = 256

_examples_lock = threading.Lock()
_examples: dict[int, tuple[tuple[object, ...], np.ndarray]] = {}


def pool_vectors(pool: ProjectPool) -> np.ndarray:
    """The unit vectors of the pool's labelled examples (kept while the pool is unchanged)."""
    mark = (pool.revision, len(pool.items), id(pool.predictor.index))
    with _examples_lock:
        known = _examples.get(id(pool))
    if known is not None and known[0] == mark:
        return known[1]
    _, _, _, vectors = pool.index.examples()
    with _examples_lock:
        if len(_examples) > 64:
            _examples.clear()
        _examples[id(pool)] = (mark, vectors)
    return vectors


def score_new(
    space: RowSpace, rows: ProjectRows, pool: ProjectPool, ids: Sequence[int], vectors: np.ndarray
) -> int:
    """Score the unlabelled ones of rows just encoded (``vectors``) into the space's frontier;
    how many."""
    keep = [n for n, i in enumerate(ids) if rows.split.get(i) == "unlabelled"]
    if not keep:
        return 0
    chosen = np.asarray([ids[n] for n in keep], dtype=np.int64)
    v = np.asarray(vectors)[keep]
    m, c = margins(pool.predictor, v), cover(pool_vectors(pool), v)
    with space.lock:
        first = not len(space.frontier.ids)
        space.frontier.put(chosen, m, c, space.pool_rev)
        if first:
            space.frontier.seen = dict(pool.items)
    return len(chosen)


def follow(
    space: RowSpace, rows: ProjectRows, pool: ProjectPool, cache: EmbeddingCache, n: int
) -> int:
    """Bring the space's scores over the labels given since they were computed (see the
    module): the ``n`` smallest margins, the ``n`` least covered and each new label's
    :data:`NEIGHBOURS` nearest candidates scored again; how many rows were."""
    f = space.frontier
    with space.lock:
        added, removed = f.pool_changes(pool.items)
        if not added and not removed:
            return 0
        space.pool_rev += 1
        rev = space.pool_rev
        if removed or len(added) > MOST_FOLLOWED:
            space.needs_pass = True
    added = added[-MOST_FOLLOWED:]
    texts = [pool.items[i][0] for i in added if i in pool.items]
    new = cache.encode(pool.encoder, texts) if texts else np.zeros((0, space.dim), np.float32)
    with space.lock:
        near = np.zeros(0, dtype=np.int64)
        if len(new) and len(space.index):
            _, found = space.index.search(new, NEIGHBOURS, exclude=rows.others())
            near = found[found >= 0]
        picked = np.unique(
            np.concatenate([f.smallest_margins(n), f.least_covered(n), near]).astype(np.int64)
        )
        picked = np.asarray([i for i in picked.tolist() if i in f and i in space.index])
        vectors = space.index.vectors(picked) if len(picked) else np.zeros((0, space.dim))
    if not len(picked):
        return 0
    m = margins(pool.predictor, vectors)
    sims = cover(new, vectors) if len(new) else None
    with space.lock:
        f.rescored(picked, m, rev)
        if sims is not None:
            f.raise_cover(picked, sims)
    return len(picked)


def rescore_oldest(space: RowSpace, pool: ProjectPool, n: int) -> int:
    """One chunk of the background's full pass (started by setting ``space.pass_rev``): the
    ``n`` candidates scored longest ago, margins and cover, as of the pool now; how many (0:
    the pass is over)."""
    with space.lock:
        target = space.pass_rev
        if target is None:
            return 0
        ids = space.frontier.oldest(n, before=target)
        ids = np.asarray([i for i in ids.tolist() if i in space.index], dtype=np.int64)
        if not len(ids):
            space.pass_rev = None
            space.needs_pass = False
            return 0
        vectors = space.index.vectors(ids)
    m, c = margins(pool.predictor, vectors), cover(pool_vectors(pool), vectors)
    with space.lock:
        space.frontier.rescore(ids, m, c, target)
    return len(ids)
