"""The labelling queue: one unlabelled utterance at a time with the model's suggestions, in the
order the annotator picked (:mod:`app.services.queue.queue_order`), and the answers (take a suggestion,
send to test, no intent, delete) written by the one labelling rule
(:func:`app.services.labelling.data.label_utterance`).

One order reviews labelled utterances instead: *likely mislabelled* (the Conflicts view's
out-of-fold check, :func:`app.services.design.conflicts.likely_mislabelled`), each shown with its
current intents and suggestions from the pool without itself.

The model is in the loop: every item's suggestions are computed when it is shown, from the live
pool, so the labels given a second ago already count. A key press is two database transactions:
the request's project, resolved at its edge, and one that writes the answer and reads what the
next card needs with it (:class:`Ahead`: the upcoming rows, the counts of the progress line and
the pool's stamp around the write), so the live pool takes the answer without reading it back
(:meth:`app.serving.live.LivePools.pool_after`) and the next card is computed from memory.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from app.access import ProjectHandle
from app.services.labelling import data as data_svc
from app.services.labelling import team as team_svc
from app.services.queue.queue_answers import (
    ACTIONS,
    Ahead,
    answer,
    answer_then,
    describe,
    read_ahead,
    undo_answer,
)
from app.services.queue.queue_order import (
    CHUNK,
    DEFAULT_ORDER,
    DISPUTES,
    LISTED,
    MAX_ASSIGNED,
    MAX_CANDIDATES,
    MINE,
    ORDERS,
    REVIEW,
    order,
)
from app.serving.factories import FactoryBuilder
from app.serving.live import LivePools
from app.serving.pools import ProjectPool
from app.serving.row_encoding import FanOut, spaces_of
from app.serving.row_progress import EncodingProgress, read_progress
from core.retrieval.scope import OUT_OF_SCOPE
from storage.db import Database
from storage.unknown_intents import unknown_intent
from storage.utterances import UtteranceRow, count_utterances, list_utterances

__all__ = [  # the orders are queue_order's, named here too: the queue's callers use one module
    "ACTIONS",
    "CHUNK",
    "DEFAULT_ORDER",
    "DISPUTES",
    "LISTED",
    "MAX_CANDIDATES",
    "MINE",
    "ORDERS",
    "OUT_OF_SCOPE",
    "REVIEW",
    "Ahead",
    "QueueItem",
    "answer",
    "answer_then",
    "card",
    "describe",
    "encoding",
    "item",
    "next_item",
    "next_items",
    "order",
    "read_ahead",
    "typed_intent",
    "undo_answer",
]

logger = logging.getLogger(__name__)

SUGGESTIONS = 3


@dataclass(frozen=True)
class Suggestion:
    intent: str
    score: float
    example: str  # the intent's labelled example nearest to the utterance


@dataclass(frozen=True)
class QueueItem:
    """An utterance to label, with the model's suggestions (best first) and its decision."""

    id: int
    version: int
    text: str
    suggestions: tuple[Suggestion, ...]
    predicted: tuple[str, ...]
    multi_label: bool
    current: tuple[str, ...] = ()  # its intents now (reviewing a labelled utterance)
    split: str = "unlabelled"  # its split now (a reviewed `test` row needs confirming)
    # the model says no intent: the top score is below its threshold (suggestions still shown)
    out_of_scope: bool = False
    threshold: float | None = None
    answers: tuple[str, ...] = ()  # the annotators' answers ("ana: card_arrival"; a dispute)
    # how far the background encoding of the project's rows is, and the space the queue
    # orders in meanwhile ("" once every row is in the space that serves: issue 72)
    encoding: str = ""

    @property
    def first_choice(self) -> str | None:
        """The top suggestion (single-label): what key ``1`` and ``Shift+Enter`` take, and
        ``Enter`` unless :attr:`enter_is_out_of_scope`."""
        return self.suggestions[0].intent if self.suggestions else None

    @property
    def enter_is_out_of_scope(self) -> bool:
        """Whether ``Enter`` answers out of scope: the card is flagged so (and says it), and no
        annotators' answers wait to be settled (a dispute: Enter takes the first answer). A
        newcomer's first Enter on "thanks for your help!" followed the card's top suggestion
        (product_availability, 0.25) while the card said it looked out of scope (issue 65)."""
        return self.out_of_scope and not self.multi_label and not self.answers


def item(
    live: LivePools,
    p: ProjectHandle,
    utterance_id: int,
    *,
    review: bool = False,
    dispute: team_svc.Dispute | None = None,
) -> QueueItem | None:
    """The utterance with fresh suggestions, or None when it is gone or no longer unlabelled
    (someone else answered it); with ``review``, a labelled utterance, suggested without
    itself; with ``dispute``, the annotators' intents first, then the model's."""
    with live.db.session() as s:
        found = list_utterances(s, p.id, ids=[utterance_id])
    if not found:
        return None
    return card(live.factories, live.pool(p.id), found[0], review=review, dispute=dispute)


def card(
    factories: FactoryBuilder,
    pool: ProjectPool,
    row: UtteranceRow,
    *,
    review: bool = False,
    dispute: team_svc.Dispute | None = None,
) -> QueueItem | None:
    """:func:`item` of a row already read, from the live ``pool`` (no database read)."""
    if row.split != "unlabelled" and not (review and row.labels):
        return None
    if len(pool.index) == 0:
        return QueueItem(row.id, row.version, row.text, (), (), False)
    text = pool.text_of(row)  # its vector is in the cache: the order encoded it
    vector = factories.cache.encode(pool.encoder, [text])
    if review:
        ranked = pool.predictor.rank(vector, exclude_ids=[row.id], show=0)[0].intents
        ranked = ranked[:SUGGESTIONS]
        return QueueItem(
            row.id,
            row.version,
            row.text,
            tuple(Suggestion(x.intent, x.score, x.best.text) for x in ranked),
            tuple(x.intent for x in ranked[:1]),
            False,
            tuple(row.labels),
            row.split,
        )
    depth = max(len(pool.intents), SUGGESTIONS) if dispute else SUGGESTIONS
    result = pool.predictor.predict_vectors([text], vector, show=0, top_n=depth)[0][0]
    suggestions = tuple(
        Suggestion(s["intent"], float(s["score"]), s["best"]["text"]) for s in result["intents"]
    )
    if dispute is not None:  # the answers given first (the model's score beside each)
        given = [i for g in dispute.answers for i in g.intents]
        suggestions = tuple(
            sorted(suggestions, key=lambda x: given.index(x.intent) if x.intent in given else 99)
        )[:SUGGESTIONS]
    return QueueItem(
        row.id,
        row.version,
        row.text,
        suggestions,
        tuple(result["labels"]),
        pool.predictor.multi_label,
        out_of_scope=_looks_out_of_scope(pool, result),
        threshold=result.get("threshold"),
        answers=tuple(f"{g.annotator}: {g.shown()}" for g in dispute.answers) if dispute else (),
    )


def _looks_out_of_scope(pool: ProjectPool, result: dict[str, Any]) -> bool:
    """The card's hint: the prediction's out of scope, where the calibration supports it for a
    card as uncertain as this one (:meth:`core.evaluation.oos.Calibration.looks_out_of_scope`)."""
    oos = bool(result["oos"]) and not pool.predictor.multi_label
    if pool.calibration is None:
        return oos
    return pool.calibration.looks_out_of_scope(oos, result["score"], result["margin"])


def _disputes(db: Database, p: ProjectHandle, how: str) -> dict[int, team_svc.Dispute]:
    """The disputes the order ``how`` shows, by id: the review queue's (those the acting user
    may decide) or the acting user's own under review; none for another order."""
    if how not in (DISPUTES, MINE):
        return {}
    found = team_svc.disputes(db, p, mine_left_out=how == DISPUTES, mine_only=how == MINE)
    return {d.id: d for d in found}


def next_item(
    live: LivePools,
    p: ProjectHandle,
    upcoming: Sequence[int],
    how: str = DEFAULT_ORDER,
    *,
    near: str | None = None,
    exclude: Sequence[int] = (),
    ahead: Ahead | None = None,
) -> tuple[QueueItem | None, list[int]]:
    """The next item still to label, and the ids after it. Takes ids from ``upcoming`` (the order
    computed before) and orders a new chunk when they run out (the review order: all it flags);
    None when nothing is left. ``ahead``: the upcoming rows and the pool's stamp read already
    (with the answer just written): the next card costs no database read."""
    chunk = MAX_ASSIGNED if how in LISTED else CHUNK
    left = list(upcoming)
    if ahead is not None and how not in LISTED:
        pool = live.pool(p.id, stamp=ahead.stamp)
        while left and left[0] in ahead.read:
            row = ahead.rows.get(left.pop(0))
            found = card(live.factories, pool, row) if row is not None else None
            if found is not None:
                return _said(live, p, found), left
    for _ in range(2):
        disputes = _disputes(live.db, p, how)
        while left:
            uid = left.pop(0)
            if how in (DISPUTES, MINE) and uid not in disputes:
                continue  # decided meanwhile
            found = item(live, p, uid, review=how == REVIEW, dispute=disputes.get(uid))
            if found is not None:
                return _said(live, p, found), left
        left = order(live, p, how, near=near, exclude=exclude, limit=chunk)
    return None, []


def next_items(
    live: LivePools,
    p: ProjectHandle,
    how: str = DEFAULT_ORDER,
    *,
    near: str | None = None,
    limit: int = CHUNK,
) -> list[QueueItem]:
    """The next ``limit`` items of the queue in the order ``how``, each as the Label tab shows
    its card (suggestions computed now from the live pool): what the tab shows the caller
    first and after it, in that order, for REST (``GET …/queue``). Nothing is answered. The
    order is computed for a chunk of :data:`CHUNK` as the tab's (an order that spreads its
    picks out picks another first 5 of 5 than of 20), or of ``limit`` when more are asked
    (the tab orders its next chunk after the answers to this one).

    Raises:
        ValueError: an unknown order, or "near" without an intent (or one with no examples).
    """
    ids = order(live, p, how, near=near, limit=max(limit, CHUNK))[:limit]
    disputes = _disputes(live.db, p, how)
    with live.db.session() as s:
        rows = {r.id: r for r in list_utterances(s, p.id, ids=ids)}
    pool = live.pool(p.id)
    cards = (
        card(live.factories, pool, rows[i], review=how == REVIEW, dispute=disputes.get(i))
        for i in ids
        if i in rows
    )
    return [c for c in cards if c is not None]


def _said(live: LivePools, p: ProjectHandle, found: QueueItem) -> QueueItem:
    """The card with the words of the project's background encoding (issue 72)."""
    progress = spaces_of(live).progress.of(p.id)
    words = progress.words() if progress is not None else ""
    return replace(found, encoding=words) if words else found


def typed_intent(db: Database, p: ProjectHandle, query: str) -> str:
    """The intent a typed ``query`` names (:func:`core.labelling.best_match`: the one match
    better than every other); a query that matches no name is refused as any unknown name is,
    naming the nearest (:mod:`storage.unknown_intents`).

    Raises:
        UnknownIntentError: nothing matches. ValueError: an empty query, or a tie. Each says
            nothing was stored.
    """
    from core.labelling import best_match, clean_query, match_intents

    names = data_svc.intent_names(db, p)
    if clean_query(query) and not match_intents(query, names, limit=1):
        raise unknown_intent(clean_query(query), names, after=" Nothing was stored.")
    try:
        return best_match(query, names)
    except ValueError as exc:
        raise ValueError(f"{exc} Nothing was stored.") from None


def remaining(db: Database, p: ProjectHandle) -> int:
    """How many utterances are still unlabelled."""
    with db.session() as s:
        return count_utterances(s, p.id, split="unlabelled")


def warm_up(live: LivePools, fan_out: FanOut | None = None) -> None:
    """Read every project's rows and the vectors kept of them (:mod:`app.serving.row_spaces`),
    encode a first batch of a project whose space holds none yet (the first card after a
    start-up encodes nothing), and start encoding the rest in the background
    (:mod:`app.serving.row_encoding`; ``fan_out``: a team's workers share it). Nothing waits
    for a whole project to be encoded (issue 72 item 2)."""
    from app.services.queue.queue_order import FIRST_BATCH
    from storage.projects import list_projects

    spaces = spaces_of(live)
    spaces.fan_out = fan_out
    with live.db.session() as s:
        projects = {p.id: p.name for p in list_projects(s)}
    for pid, name in projects.items():
        pool = live.pool(pid)
        space = spaces.space(pid, pool)  # read back from disk: a restart encodes nothing
        if len(space.frontier) < FIRST_BATCH // 2:  # a project whose rows were never scored
            rows = spaces.rows(pid, full=True)
            if rows.unlabelled():
                spaces.first_batch(pid, pool, space, FIRST_BATCH)
        logger.debug("queue of %s: %d rows encoded", name, len(space))
    spaces.start()  # reads every project's rows, encodes what they lack


def encoding(live: LivePools, p: ProjectHandle) -> EncodingProgress | None:
    """How far the background encoding of the project's rows is, and the space the queue
    orders in: this process's (the server), else what the server on this machine last wrote
    (the CLI); None when neither knows."""
    spaces = spaces_of(live)
    return spaces.progress.of(p.id) or read_progress(spaces.root, p.id)
