"""The orders of the labelling queue (:data:`ORDERS`): which unlabelled utterances come next,
computed for a chunk of :data:`CHUNK` at a time over every row of the project, at any size up to
the row cap (issue 72 item 1: the first 5,000 unlabelled rows in file order were all an order
saw). In a team project an annotator's own items come first and the team's other items are left
out (:mod:`app.services.labelling.team`).

Every row is in its project's row index (:mod:`app.serving.row_spaces`, filled in the background
by :mod:`app.serving.row_encoding`) with its scores (margin, cover: :mod:`core.labelling.frontier`),
kept up to date piece by piece: an order refreshes, exactly, the :data:`MAX_CANDIDATES` smallest
margins, the :data:`MAX_CANDIDATES` least covered and the neighbours of what was labelled since
(:func:`app.serving.row_scores.follow`), picks among them, and checks its picks against the
database (a row answered elsewhere is passed over). "Near an intent" searches the index with the
intent's examples. A project whose rows are not encoded yet is ordered over a first batch encoded
at once (:meth:`~app.serving.row_encoding.RowSpaces.first_batch`), the rest joining as the
background encodes them; while a new version's space is encoded, the last space that holds every
candidate orders (:func:`ordering_pool`), and says so.

The default, *most useful next* (the smallest margins, spread out:
:func:`core.labelling.uncertain_spread_out`), is the order ``bench/active.py`` measured to need
the fewest labels on BANKING77 with the tuned encoder (2 seeds, retrain every 2 rounds of 77): it
reaches the accuracy of 10 random examples per intent with 539 labels (70 %), where most
uncertain first needs 539-616 and random order more than 770.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from app.access import ProjectHandle
from app.services.design import conflicts as conflicts_svc
from app.services.labelling import team as team_svc
from app.serving import row_encoding
from app.serving.live import LivePools
from app.serving.pools import ProjectPool, sync
from app.serving.row_encoding import RowSpaces, spaces_of
from app.serving.row_scores import FOLLOWED, follow
from app.serving.row_spaces import ProjectRows, RowSpace
from core.encoding.cache import CachedEncoder
from core.encoding.previous_turn import with_context
from core.labelling import (
    farthest_first,
    most_similar_first,
    smallest_margin_first,
    uncertain_spread_out,
)
from core.labelling.frontier import cover, margins
from storage.row_texts import row_states, row_texts
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
# The candidates an order refreshes and picks from (the smallest margins, the least covered),
# out of every row of the project; the background refreshes as many after new labels, so a
# key mostly finds them fresh (2,000 rescored on a key took 0.2-0.4 s at 25k rows, load 7).
MAX_CANDIDATES = FOLLOWED
# An annotator's own items ordered at once (a team project), and a review list's length.
MAX_ASSIGNED = 5000
# The examples of an intent "near an intent" searches with (its newest).
NEAR_QUERIES = 64
# The rows a first card encodes and orders itself when the project's space holds none yet (a
# fresh import of any size: the rest are encoded in the background behind it).
FIRST_BATCH = 128
# Candidates a key may encode itself when the space that orders lacks their vectors (rows just
# added to a small project; what a project's first order after a new version costs); past it
# the background encodes them, and the last space that has them all orders meanwhile.
ENCODE_ON_KEY = 64


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
        mine = [i for i in team_svc.open_items_in(s, p) if i not in skip][:MAX_ASSIGNED]
        skip |= set() if mine else team_svc.reserved_in(s, p)
        if mine:
            rows = [r for r in list_utterances(s, p.id, ids=mine) if r.id not in skip]
            anchors = [r for r in labelled_pool(s, p.id) if near in r.labels] if near else []
        elif how == "file":
            found = list_utterances(s, p.id, split="unlabelled", limit=limit + len(skip))
            return [r.id for r in found if r.id not in skip][:limit]
    if mine:
        return _order_listed(live, p.id, how, rows, anchors, near, limit)
    return _order_every_row(live, p, how, near, skip, limit)


def _order_every_row(
    live: LivePools, p: ProjectHandle, how: str, near: str | None, skip: set[int], limit: int
) -> list[int]:
    """:func:`order` over every unlabelled row of the project (see the module)."""
    spaces = spaces_of(live)
    rows = spaces.rows(p.id)
    pool, space, serving = ordering_pool(live, spaces, rows)
    _fill(spaces, rows, pool, space)
    follow(space, rows, pool, live.cache, MAX_CANDIDATES)
    spaces.progress.seen(p.id, serving, rows)
    spaces.progress.ordered(p.id, space.label)
    left_out = set(skip)
    picks: list[int] = []
    for _ in range(3):  # picks answered or deleted elsewhere meanwhile are passed over
        picks = _picks(live, rows, pool, space, how, near, left_out, limit)
        with live.db.session() as s:
            still = {r.id for r in list_utterances(s, p.id, ids=picks) if r.split == "unlabelled"}
        gone = [i for i in picks if i not in still]
        if not gone:
            return picks
        with space.lock:
            space.frontier.drop(gone)
        spaces.forget_rows(p.id, gone)
        left_out.update(gone)
    return [i for i in picks if i not in left_out]


def _fill(spaces: RowSpaces, rows: ProjectRows, pool: ProjectPool, space: RowSpace) -> None:
    """What a key encodes itself: a first batch when the space holds none of the project's
    candidates yet, or the few rows a small project's space lacks (just added)."""
    unlabelled = rows.unlabelled()
    if not unlabelled:
        return
    if len(rows) <= row_encoding.SYNC_REFRESH_ROWS:
        missing = space.missing(rows, unlabelled)
        if missing and len(missing) <= ENCODE_ON_KEY:
            spaces.encode(rows.project_id, rows, pool, space, missing)
        elif missing:
            spaces.adopt(rows, pool, space, missing)  # what the cache holds: no encoding
        unscored = [i for i in unlabelled if i in space.keys and i not in space.frontier]
        if unscored:
            spaces.score(rows, pool, space, unscored)
    if len(space.frontier) < min(FIRST_BATCH, len(unlabelled)) // 2:
        spaces.first_batch(rows.project_id, pool, space, FIRST_BATCH)


def _picks(
    live: LivePools,
    rows: ProjectRows,
    pool: ProjectPool,
    space: RowSpace,
    how: str,
    near: str | None,
    skip: set[int],
    limit: int,
) -> list[int]:
    """The next ``limit`` candidates of ``space`` in the order ``how``, leaving ``skip`` out."""
    f = space.frontier
    if how == "near":
        return _near(live, rows, pool, space, str(near), skip, limit)
    with space.lock:
        if how == "uncertain":
            return [int(i) for i in f.smallest_margins(limit, skip)]
        chosen = (
            f.least_covered(MAX_CANDIDATES, skip)
            if how == "diverse"
            else f.smallest_margins(2 * limit, skip)
        )
        vectors = space.index.vectors(chosen)
        m, c = f.scores(chosen)
    if how == "diverse":
        picks = farthest_first(vectors, c, limit)
    else:  # useful
        picks = uncertain_spread_out(vectors, m, c, limit)
    return [int(chosen[i]) for i in picks]


def _near(
    live: LivePools,
    rows: ProjectRows,
    pool: ProjectPool,
    space: RowSpace,
    near: str,
    skip: set[int],
    limit: int,
) -> list[int]:
    """The candidates most like the intent's examples (its :data:`NEAR_QUERIES` newest), from
    the row index: each candidate's best similarity to one of them, best first."""
    examples = sorted(i for i, (_, labels) in pool.items.items() if near in labels)
    if not examples:
        raise ValueError(f"{near!r} has no labelled training examples yet.")
    texts = [pool.items[i][0] for i in examples[-NEAR_QUERIES:]]
    queries = live.cache.encode(pool.encoder, texts)
    left_out = set(rows.others()) | skip
    with space.lock:
        sims, found = space.index.search(queries, limit, exclude=left_out)
    best: dict[int, float] = {}
    for s, i in zip(sims.ravel().tolist(), found.ravel().tolist(), strict=True):
        if i >= 0 and i not in left_out and s > best.get(i, -2.0):
            best[i] = s
    ids = list(best)
    return [ids[n] for n in most_similar_first(np.array([best[i] for i in ids]))][:limit]


def ordering_pool(
    live: LivePools, spaces: RowSpaces, rows: ProjectRows
) -> tuple[ProjectPool, RowSpace, RowSpace]:
    """The pool (and its row space) that orders the queue, and the space that serves: the
    pool that serves, unless its
    space does not hold every candidate yet and the last pool that ordered the queue has a
    space that does (a new version's: its model, a minute older, orders them until the
    background has encoded them all in the new space; issue 63 item 3, issue 72 item 3). The
    older pool is brought up to the labels first (a label counts in its space too)."""
    project_id = rows.project_id
    pool = live.pool(project_id)
    space = spaces.space(project_id, pool)
    older = live.ordered.get(project_id)
    if older is not None and older is not pool and older.encoder.fingerprint != space.fingerprint:
        if not spaces.holds_all(rows, space) and len(rows) <= row_encoding.SYNC_REFRESH_ROWS:
            spaces.adopt(rows, pool, space, space.missing(rows, rows.unlabelled()))
        held = spaces.space(project_id, older)
        if not spaces.holds_all(rows, space) and spaces.holds_all(rows, held):
            with older.lock:
                sync(older, live.db, live.cache, older.settings, correction=older.correction)
            return older, held, space
    live.ordered[project_id] = pool  # it orders them (its space has them, or will have)
    return pool, space, space


def _order_listed(
    live: LivePools,
    project_id: int,
    how: str,
    rows: list[UtteranceRow],
    anchors: list[UtteranceRow],
    near: str | None,
    limit: int,
) -> list[int]:
    """An order of a given list of rows (an annotator's assigned items), encoded and scored
    whole."""
    if how == "file" or not rows:
        return [r.id for r in rows[:limit]]
    pool = live.pool(project_id)
    vectors = live.cache.encode(pool.encoder, [pool.text_of(r) for r in rows])
    if how == "near":
        if not anchors:
            raise ValueError(f"{near!r} has no labelled training examples yet.")
        sims = vectors @ live.cache.encode(pool.encoder, [pool.text_of(r) for r in anchors]).T
        picks = most_similar_first(sims.max(axis=1))[:limit]
    else:
        _, _, _, examples = pool.index.examples()
        covered = cover(examples, vectors)
        if how == "diverse":
            picks = farthest_first(vectors, covered, limit)
        elif how == "useful":
            picks = uncertain_spread_out(vectors, margins(pool.predictor, vectors), covered, limit)
        else:
            picks = smallest_margin_first(margins(pool.predictor, vectors))[:limit]
    return [rows[i].id for i in picks]


def encode_candidates(
    live: LivePools,
    p: ProjectHandle,
    progress: Callable[[int, int], None] | None = None,
    encoder: CachedEncoder | None = None,
) -> int:
    """Encode a seeded sample of the queue's candidates (up to :data:`MAX_ASSIGNED` of the
    project's unlabelled rows, spread over the whole file) in the space that serves the project
    now (or ``encoder``'s, one about to serve), into the embedding cache (what a retrain's
    worker does for the space that stays: the server's background adopts them and encodes the
    rest, and the queue orders in that space once it holds them all); how many were encoded.
    It reads no row space (a worker's process holds none)."""
    with live.db.session() as s:
        state = row_states(s, p.id)
        unlabelled = [
            i for i, split in zip(state.ids, state.splits, strict=True) if split == "unlabelled"
        ]
        picks = np.random.default_rng(p.id).permutation(len(unlabelled))[:MAX_ASSIGNED]
        texts = row_texts(s, p.id, [unlabelled[j] for j in sorted(picks.tolist())])
    pool = live.pool(p.id)
    before = live.cache.encoded
    live.cache.encode(
        encoder if encoder is not None else pool.encoder,
        [with_context(t, c) if pool.use_context else t for t, c in texts.values()],
        progress=progress,
    )
    return live.cache.encoded - before
