"""The orders of the labelling queue (:data:`ORDERS`): which unlabelled utterances come next,
computed for a chunk of :data:`CHUNK` at a time from up to :data:`MAX_CANDIDATES` candidates
(in file order), so "most uncertain" follows the new labels. In a team project an annotator's
own items come first and the team's other items are left out (:mod:`app.services.labelling.team`).

The default, *most useful next* (the smallest margins, spread out:
:func:`core.labelling.uncertain_spread_out`), is the order ``bench/active.py`` measured to need
the fewest labels on BANKING77 with the tuned encoder (2 seeds, retrain every 2 rounds of 77): it
reaches the accuracy of 10 random examples per intent with 539 labels (70 %), where most
uncertain first needs 539–616 and random order more than 770. A chunk of 2,500 candidates is
ordered from every intent's score at once (:meth:`Predictor.score_matrix`) and one product with
the pool's vectors: about 0.1 s.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from app.access import ProjectHandle
from app.services.design import conflicts as conflicts_svc
from app.services.labelling import team as team_svc
from app.serving.live import LivePools
from app.serving.pools import ProjectPool
from core.labelling import (
    farthest_first,
    most_similar_first,
    smallest_margin_first,
    uncertain_spread_out,
)
from core.retrieval import KnnIndex
from core.retrieval.knn import normalise
from core.retrieval.predictor import Predictor
from core.retrieval.rule import rank
from storage.utterances import UtteranceRow, labelled_pool, list_utterances

ORDERS = {
    "useful": "Most useful next (uncertain, varied)",
    "uncertain": "Most uncertain first",
    "diverse": "Least like anything labelled",
    "file": "File order",
    "near": "Near an intent",
    "mislabelled": "Likely mislabelled (review labelled)",
    "disputes": "Disagreements to review (team)",
    "mine": "My answers under review (team)",
}
DEFAULT_ORDER = "useful"
REVIEW = "mislabelled"  # the order that shows labelled utterances
DISPUTES = "disputes"  # overlap items whose annotators disagree (app.services.labelling.team)
MINE = "mine"  # those of them the acting annotator answered: shown, another reviewer decides
LISTED = (REVIEW, DISPUTES, MINE)  # orders of a list computed whole (no unlabelled chunks)
CHUNK = 20
MAX_CANDIDATES = 5000


def order(
    live: LivePools,
    p: ProjectHandle,
    how: str = DEFAULT_ORDER,
    *,
    near: str | None = None,
    exclude: Sequence[int] = (),
    limit: int = CHUNK,
) -> list[int]:
    """The ids of the next ``limit`` unlabelled utterances in the order ``how`` (see
    :data:`ORDERS`), leaving out ``exclude`` (e.g. the ones skipped in this session). In a team
    project the annotator's own assigned items come first, and items assigned to others are
    theirs (left out); a project nobody was assigned in is ordered as it always was."""
    if how not in ORDERS:
        raise ValueError(f"Unknown order {how!r}; use one of {', '.join(ORDERS)}.")
    if how == "near" and not near:
        raise ValueError("Pick the intent to label near.")
    skip = set(exclude)
    if how == REVIEW:
        return [i for i in conflicts_svc.likely_mislabelled(live, p) if i not in skip][:limit]
    if how in (DISPUTES, MINE):
        disputed = team_svc.disputes(
            live.db, p, mine_left_out=how == DISPUTES, mine_only=how == MINE
        )
        return [d.id for d in disputed if d.id not in skip][:limit]
    with live.db.session() as s:
        mine = [i for i in team_svc.open_items_in(s, p) if i not in skip][:MAX_CANDIDATES]
        skip |= set() if mine else team_svc.reserved_in(s, p)
        found = (
            list_utterances(s, p.id, ids=mine)
            if mine
            else list_utterances(s, p.id, split="unlabelled", limit=MAX_CANDIDATES + len(skip))
        )
        rows = [r for r in found if r.id not in skip][:MAX_CANDIDATES]
        anchors = [r for r in labelled_pool(s, p.id) if near in r.labels] if near else []
    if how == "file" or not rows:
        return [r.id for r in rows[:limit]]
    pool = ordering_pool(live, p.id, rows)
    vectors = live.cache.encode(pool.encoder, [pool.text_of(r) for r in rows])
    if how == "near":
        if not anchors:
            raise ValueError(f"{near!r} has no labelled training examples yet.")
        sims = vectors @ live.cache.encode(pool.encoder, [pool.text_of(r) for r in anchors]).T
        picks = most_similar_first(sims.max(axis=1))[:limit]
    elif how == "diverse":
        picks = farthest_first(vectors, _pool_similarity(pool.index, vectors), limit)
    elif how == "useful":
        margins = _margins(pool.predictor, vectors)
        pool_sim = _pool_similarity(pool.index, vectors)
        picks = uncertain_spread_out(vectors, margins, pool_sim, limit)
    else:
        picks = smallest_margin_first(_margins(pool.predictor, vectors))[:limit]
    return [rows[i].id for i in picks]


# Candidates a key may encode itself when the space that serves lacks their vectors (what a
# project's first order after a new version costs); past it the last space that has them orders.
ENCODE_ON_KEY = 64


def ordering_pool(live: LivePools, project_id: int, rows: Sequence[UtteranceRow]) -> ProjectPool:
    """The pool that orders the queue's candidates ``rows``: the one that serves, unless its
    space lacks more than :data:`ENCODE_ON_KEY` of their vectors and the last pool that ordered
    them has them all (its model, a minute older, orders them; the next key does not wait
    seconds for 2,000 encodings: issue 63 item 3)."""
    pool = live.pool(project_id)
    missing = live.cache.missing(pool.encoder, [pool.text_of(r) for r in rows])
    older = live.ordered.get(project_id)
    if (
        len(missing) > ENCODE_ON_KEY
        and older is not None
        and older is not pool
        and not live.cache.missing(older.encoder, [older.text_of(r) for r in rows])
    ):
        return older
    live.ordered[project_id] = pool  # it orders them (its space has them, or will have)
    return pool


def encode_candidates(live: LivePools, p: ProjectHandle) -> int:
    """Encode the queue's candidates in the space that serves the project now (what a retrain's
    worker does for the space that stays), so that space orders the queue from then on; how
    many were encoded."""
    with live.db.session() as s:
        rows = list_utterances(s, p.id, split="unlabelled", limit=MAX_CANDIDATES)
    pool = live.pool(p.id)
    before = live.cache.encoded
    live.cache.encode(pool.encoder, [pool.text_of(r) for r in rows])
    live.ordered[p.id] = pool
    return live.cache.encoded - before


def _margins(predictor: Predictor, vectors: np.ndarray) -> np.ndarray:
    """Each candidate's top score minus the runner-up's, as the live Predictor ranks them (its
    anchors, ``k`` and rule): from every intent's score at once (:meth:`Predictor.score_matrix`,
    3x faster than ranking 2,500 candidates; 1.0 without a runner-up, 0.0 with no intent)."""
    return rank(predictor.score_matrix(vectors)).margins


def _pool_similarity(index: KnnIndex, vectors: np.ndarray) -> np.ndarray:
    """Each candidate's similarity to its nearest labelled example (-1: empty pool), as one
    product with the pool's stored unit vectors."""
    _, _, _, pool = index.examples()
    if not len(pool):
        return np.full(len(vectors), -1.0)
    return (normalise(vectors) @ pool.T).max(axis=1).astype(np.float64)
