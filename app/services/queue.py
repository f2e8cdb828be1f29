"""The labelling queue: one unlabelled utterance at a time with the model's suggestions, in the
order the annotator picked, and the answers (take a suggestion, send to test, no intent, delete)
written by the one labelling rule (:func:`app.services.data.label_utterance`).

One order reviews labelled utterances instead: *likely mislabelled* (the Conflicts view's
out-of-fold check, :func:`app.services.conflicts.likely_mislabelled`), each shown with its
current intents and suggestions from the pool without itself.

The model is in the loop: every item's suggestions are computed when it is shown, from the live
pool, so the labels given a second ago already count. The order is computed for a chunk of
:data:`CHUNK` items at a time from up to :data:`MAX_CANDIDATES` unlabelled utterances (in file
order), and recomputed when the chunk is used up, so "most uncertain" follows the new labels.
The review order takes the whole list of flagged utterances at once (it is short), so the
progress line can say how many are left to review.

The default, *most useful next* (the smallest margins, spread out:
:func:`core.labelling.uncertain_spread_out`), is the order ``bench/active.py`` measured to need
the fewest labels on BANKING77 with the tuned encoder (2 seeds, retrain every 2 rounds of 77): it
reaches the accuracy of 10 random examples per intent with 539 labels (70 %), where most
uncertain first needs 539–616 and random order more than 770.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.access import ProjectHandle
from app.context import AppContext
from app.pools import ProjectPool
from app.services import conflicts as conflicts_svc
from app.services import data as data_svc
from app.services import team as team_svc
from core.evaluation.oos import OUT_OF_SCOPE
from core.labelling import (
    farthest_first,
    most_similar_first,
    smallest_margin_first,
    uncertain_spread_out,
)
from core.retrieval import KnnIndex
from core.retrieval.predictor import Predictor
from storage.errors import NotFoundError
from storage.utterances import count_utterances, find_by_text, labelled_pool, list_utterances

logger = logging.getLogger(__name__)

ORDERS = {
    "useful": "Most useful next (uncertain, varied)",
    "uncertain": "Most uncertain first",
    "diverse": "Least like anything labelled",
    "file": "File order",
    "near": "Near an intent",
    "mislabelled": "Likely mislabelled (review labelled)",
    "disputes": "Disagreements to review (team)",
}
DEFAULT_ORDER = "useful"
REVIEW = "mislabelled"  # the order that shows labelled utterances
DISPUTES = "disputes"  # overlap items whose annotators disagree (app.services.team)
ACTIONS = ("take", "test", "none", "delete", "oos")
CHUNK = 20
MAX_CANDIDATES = 5000
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

    @property
    def first_choice(self) -> str | None:
        """What ``Enter`` and ``t`` take (single-label): the top suggestion, always; out of scope
        has a key of its own (``o``), so a doubtful threshold never turns Enter into it."""
        return self.suggestions[0].intent if self.suggestions else None


def order(
    ctx: AppContext,
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
        return [i for i in conflicts_svc.likely_mislabelled(ctx, p) if i not in skip][:limit]
    if how == DISPUTES:
        disputed = team_svc.disputes(ctx, p, mine_left_out=True)
        return [d.id for d in disputed if d.id not in skip][:limit]
    mine = [i for i in team_svc.open_items(ctx, p) if i not in skip][:MAX_CANDIDATES]
    skip |= set() if mine else team_svc.reserved(ctx, p)
    with ctx.db.session() as s:
        found = (
            list_utterances(s, p.id, ids=mine)
            if mine
            else list_utterances(s, p.id, split="unlabelled", limit=MAX_CANDIDATES + len(skip))
        )
        rows = [r for r in found if r.id not in skip][:MAX_CANDIDATES]
        anchors = [r for r in labelled_pool(s, p.id) if near in r.labels] if near else []
    if how == "file" or not rows:
        return [r.id for r in rows[:limit]]
    pool = ctx.pool(p.id)
    vectors = ctx.cache.encode(pool.encoder, [pool.text_of(r) for r in rows])
    if how == "near":
        if not anchors:
            raise ValueError(f"{near!r} has no labelled training examples yet.")
        sims = vectors @ ctx.cache.encode(pool.encoder, [pool.text_of(r) for r in anchors]).T
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


def _margins(predictor: Predictor, vectors: np.ndarray) -> np.ndarray:
    """Each candidate's top score minus the runner-up's, as the live Predictor ranks them (its
    anchors, ``k`` and rule; the 50 nearest examples are enough to order a queue)."""
    return np.array([p.margin for p in predictor.rank(vectors, show=0, depth=50)])


def _pool_similarity(index: KnnIndex, vectors: np.ndarray) -> np.ndarray:
    """Each candidate's similarity to its nearest labelled example (-1: empty pool)."""
    nearest = index.search(vectors, 1)
    return np.array([hits[0].similarity if hits else -1.0 for hits in nearest])


def item(
    ctx: AppContext,
    p: ProjectHandle,
    utterance_id: int,
    *,
    review: bool = False,
    dispute: team_svc.Dispute | None = None,
) -> QueueItem | None:
    """The utterance with fresh suggestions, or None when it is gone or no longer unlabelled
    (someone else answered it); with ``review``, a labelled utterance, suggested without
    itself; with ``dispute``, the annotators' intents first, then the model's."""
    with ctx.db.session() as s:
        found = list_utterances(s, p.id, ids=[utterance_id])
    if not found or (found[0].split != "unlabelled" and not (review and found[0].labels)):
        return None
    row = found[0]
    pool = ctx.pool(p.id)
    if len(pool.index) == 0:
        return QueueItem(row.id, row.version, row.text, (), (), False)
    if review:
        vector = ctx.cache.encode(pool.encoder, [pool.text_of(row)])
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
    result = pool.predictor.predict([pool.text_of(row)], show=0, top_n=depth)[0]
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


def next_item(
    ctx: AppContext,
    p: ProjectHandle,
    upcoming: Sequence[int],
    how: str = DEFAULT_ORDER,
    *,
    near: str | None = None,
    exclude: Sequence[int] = (),
) -> tuple[QueueItem | None, list[int]]:
    """The next item still to label, and the ids after it. Takes ids from ``upcoming`` (the order
    computed before) and orders a new chunk when they run out (the review order: all it flags);
    None when nothing is left."""
    chunk = MAX_CANDIDATES if how in (REVIEW, DISPUTES) else CHUNK
    ahead = list(upcoming)
    for _ in range(2):
        disputes = (
            {d.id: d for d in team_svc.disputes(ctx, p, mine_left_out=True)}
            if how == DISPUTES
            else {}
        )
        while ahead:
            uid = ahead.pop(0)
            if how == DISPUTES and uid not in disputes:
                continue  # decided meanwhile
            found = item(ctx, p, uid, review=how == REVIEW, dispute=disputes.get(uid))
            if found is not None:
                return found, ahead
        ahead = order(ctx, p, how, near=near, exclude=exclude, limit=chunk)
    return None, []


def remaining(ctx: AppContext, p: ProjectHandle) -> int:
    """How many utterances are still unlabelled."""
    with ctx.db.session() as s:
        return count_utterances(s, p.id, split="unlabelled")


def answer(
    ctx: AppContext,
    p: ProjectHandle,
    utterance_id: int,
    action: str,
    labels: Sequence[str] = (),
    *,
    expected_version: int | None = None,
    batch: str | None = None,
    confirm_test: bool = False,
    how: str | None = None,
) -> str:
    """Write the annotator's answer and say what happened. ``take``: the labels (into `train`);
    ``test``: the labels, into `test`; ``none``: reviewed, no intent (kept in `train` without an
    intent, out of the queue); ``delete``: removed (undo brings it back); ``oos``: labelled
    out of scope (into `train`, where it teaches the threshold). ``batch`` names the
    change in the audit log, so :func:`undo_answer` takes back this answer and nothing else.
    An answer that would change a `test` row (the review order shows labelled ones) is refused
    unless ``confirm_test`` (:class:`app.services.data.UnconfirmedTestChange`).

    In a team project (:mod:`app.services.team`) ``take`` and ``oos`` on an item assigned to
    you are your answer (accepted alone, or on agreement); on an item assigned to others they
    are refused; in the :data:`DISPUTES` order (``how``) they are the reviewer's decision."""
    if action not in ACTIONS:
        raise ValueError(f"Unknown answer {action!r}; use one of {', '.join(ACTIONS)}.")
    names = [OUT_OF_SCOPE] if action == "oos" else list(labels)
    if action in ("take", "test") and not names:
        raise ValueError("Pick an intent first (1-3, or type to filter).")
    if action in ("take", "oos"):
        if how == DISPUTES:
            return team_svc.decide(ctx, p, utterance_id, names, batch=batch)
        if p.actor.id is not None and p.actor.id in team_svc.annotators_of(ctx, p, utterance_id):
            kind = "oos" if action == "oos" else "label"
            return team_svc.submit(ctx, p, utterance_id, kind, names, batch=batch)
    if action == "delete":
        data_svc.delete_utterance(ctx, p, utterance_id, batch=batch, confirm_test=confirm_test)
        return f"Deleted #{utterance_id} (u to undo)."
    split = {"take": None, "oos": None, "test": "test", "none": "train"}[action]
    row = data_svc.label_utterance(
        ctx,
        p,
        utterance_id,
        [] if action == "none" else names,
        split=split,
        expected_version=expected_version,
        batch=batch,
        confirm_test=confirm_test,
    )
    what = ", ".join(row["labels"]) or "no intent"
    return f"#{utterance_id} → {what} ({row['split']})."


def describe(utterance_id: int, action: str, labels: Sequence[str] = ()) -> str:
    """One answer of the queue in words (what an undo says it took back).

    Example:
        >>> describe(123, "take", ["card_arrival"]), describe(7, "delete")
        ('#123 labelled card_arrival', '#7 deleted')
    """
    names = ", ".join(labels) or "no intent"
    return {
        "take": f"#{utterance_id} labelled {names}",
        "oos": f"#{utterance_id} labelled {OUT_OF_SCOPE}",
        "test": f"#{utterance_id} labelled {names} into test",
        "none": f"#{utterance_id} marked no intent",
        "delete": f"#{utterance_id} deleted",
        "skip": f"#{utterance_id} skipped",
    }[action]


def undo_answer(
    ctx: AppContext,
    p: ProjectHandle,
    *,
    utterance_id: int,
    action: str,
    labels: Sequence[str] = (),
    batch: str | None = None,
    text: str = "",
    how: str | None = None,
) -> tuple[str, int]:
    """Take back one answer given in the queue (its own batch, never a later or another
    person's change; refused, nothing changed, when someone edited the utterance since). Returns
    what it undid and the utterance's id now: a deleted utterance comes back under a new id, and
    the queue shows it again. A skip changed nothing stored: it is only shown again."""
    what = describe(utterance_id, action, labels)
    if action == "skip" or batch is None:
        return f"Undid: {what}.", utterance_id
    team_answer = how != DISPUTES and action in ("take", "oos")
    if team_answer and team_svc.withdraw(ctx, p, utterance_id, batch):
        return f"Undid: {what}.", utterance_id  # the answer and the label it made, if any
    try:
        data_svc.undo_batch(ctx, p, batch)
    except NotFoundError:  # the answer wrote nothing (the utterance had those labels already)
        return f"Undid: {what} (it had changed nothing).", utterance_id
    if action != "delete":
        return f"Undid: {what}.", utterance_id
    with ctx.db.session() as s:
        back = find_by_text(s, p.id, text)
    if back is None:
        raise NotFoundError(f"#{utterance_id} was restored but cannot be found again.")
    return f"Undid: {what} (back as #{back}).", back


def warm_up(ctx: AppContext) -> None:
    """Encode every project's queue candidates into the embedding cache (at start-up, so the
    first order does not pay for it)."""
    from storage.projects import list_projects

    with ctx.db.session() as s:
        projects = {p.id: p.name for p in list_projects(s)}
    for pid, name in projects.items():
        with ctx.db.session() as s:
            rows = list_utterances(s, pid, split="unlabelled", limit=MAX_CANDIDATES)
        if rows:
            pool = ctx.pool(pid)
            ctx.cache.encode(pool.encoder, [pool.text_of(r) for r in rows])
            logger.debug("queue of %s: %d candidates encoded", name, len(rows))
