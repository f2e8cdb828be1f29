"""Candidate intents from the unlabelled logs: cluster the `unlabelled` utterances in the active
model's space (:func:`core.design.find_clusters`), then turn a cluster into a new intent or add
it to an existing one, through the one safe bulk labelling (:func:`app.services.labelling.bulk.label_many`:
one batch, one Undo; utterances labelled meanwhile are left as they are).

Example:
    >>> found = candidate_intents(serving_state, "demo")  # doctest: +SKIP
    >>> create_from_cluster(serving_state, "demo", list(found[0].ids), found[0].suggested_name)  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import plotly.graph_objects as go

from app.access import ProjectHandle
from app.services.design.maps import MapView, map_figure
from app.services.labelling import bulk
from app.serving.live import LivePools
from core.design import MIN_UTTERANCES, find_clusters
from storage.db import Database
from storage.projects import list_intents
from storage.utterances import list_utterances

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Candidate:
    """A cluster of unlabelled utterances, ready to show: its ids and texts (most central
    first), its words, size, coherence (``cohesion``: the mean cosine similarity of its
    utterances to its centre), nearest existing intent, and the existing intents it resembles
    (``resembles``: those the live model gives its utterances, ``resembling`` of them, at
    least :data:`core.design.clusters.RESEMBLES`; empty: it looks new)."""

    number: int
    title: str
    suggested_name: str
    keywords: tuple[str, ...]
    ids: tuple[int, ...]
    texts: tuple[str, ...]
    cohesion: float
    nearest_intent: str | None
    nearest_similarity: float
    resembles: tuple[str, ...] = ()
    resembling: int = 0

    @property
    def size(self) -> int:
        return len(self.ids)

    @property
    def looks_like(self) -> str:
        """Which existing intents it resembles, in words: ``change_pin (9 of 11)``, or ``new``.

        Example:
            >>> Candidate(1, "pin", "pin", ("pin",), (1, 2, 3), ("a", "b", "c"), 0.9, "change_pin",
            ...           0.8, ("change_pin", "pin_blocked"), 3).looks_like
            'change_pin, pin_blocked (3 of 3)'
        """
        if not self.resembles:
            return "new"
        return f"{', '.join(self.resembles)} ({self.resembling} of {self.size})"

    @property
    def coherence(self) -> str:
        """The cohesion as people read it: ``92%``."""
        return f"{self.cohesion:.0%}"

    @property
    def choice(self) -> str:
        """How a picker shows it: ``2 · card · lost (14, 92% coherent)``, and ``≈ change_pin``
        after it when it resembles that intent."""
        like = f" ≈ {', '.join(self.resembles)}" if self.resembles else ""
        return f"{self.number} · {self.title} ({self.size}, {self.coherence} coherent){like}"


def candidate_intents(
    live: LivePools, p: ProjectHandle, *, min_size: int | None = None
) -> list[Candidate]:
    """The project's unlabelled utterances, every one of them, grouped into candidate intents:
    the new ones first, then those that resemble an existing intent, each most coherent first
    (past :data:`core.design.clusters.SAMPLE` of them, HDBSCAN groups a seeded sample and the
    others join the nearest group: :func:`core.design.find_clusters`).

    Raises:
        ValueError: an unknown project, or fewer than :data:`core.design.MIN_UTTERANCES`
            unlabelled utterances.
    """
    with live.db.session() as s:
        rows = list_utterances(s, p.id, split="unlabelled")
    if len(rows) < MIN_UTTERANCES:
        raise ValueError(
            f"This project has {len(rows)} unlabelled utterances; candidate intents need at "
            f"least {MIN_UTTERANCES}. Import unlabelled logs in the Data tab (a file with a "
            "text column only)."
        )
    pool = live.pool(p.id)  # the live Predictor names each cluster's nearest intent
    texts = [r.text for r in rows]
    vectors = live.cache.encode(pool.encoder, [pool.text_of(r) for r in rows])
    clusters = find_clusters(vectors, texts, pool=pool.predictor, min_size=min_size)
    return [
        Candidate(
            c.number,
            c.title,
            c.suggested_name,
            c.keywords,
            tuple(rows[i].id for i in c.members),
            tuple(rows[i].text for i in c.members),
            c.cohesion,
            c.nearest_intent,
            c.nearest_similarity,
            c.resembles,
            c.resembling,
        )
        for c in clusters
    ]


def _chosen(ids: Sequence[int]) -> list[int]:
    chosen = list(dict.fromkeys(int(i) for i in ids))
    if not chosen:
        raise ValueError("Choose at least one example of the cluster to keep.")
    return chosen


def create_from_cluster(
    db: Database, p: ProjectHandle, ids: Sequence[int], name: str
) -> bulk.BulkPlan:
    """A new intent holding the chosen utterances of a cluster, as one batch (one Undo).

    Raises:
        ValueError: no examples chosen, no name, or the name of an intent that exists already.
    """
    chosen = _chosen(ids)
    name = (name or "").strip()
    if not name:
        raise ValueError("Give the new intent a name.")
    with db.session() as s:
        existing = {i.name for i in list_intents(s, p.id)}
    if name in existing:
        raise ValueError(
            f"Intent {name!r} already exists: pick it under 'Add to an existing intent' instead."
        )
    return bulk.label_many(db, p, chosen, [name], create=True)  # its explicit creation


def add_to_intent(db: Database, p: ProjectHandle, ids: Sequence[int], intent: str) -> bulk.BulkPlan:
    """Give the chosen utterances of a cluster an existing intent, as one batch (one Undo).

    Raises:
        ValueError: no examples chosen, no intent, or an intent the project does not have
            (named with the nearest: :mod:`storage.unknown_intents`).
    """
    chosen = _chosen(ids)
    if not intent:
        raise ValueError("Pick the intent to add the examples to.")
    return bulk.label_many(db, p, chosen, [intent])


def cluster_figure(view: MapView, ids: Sequence[int], title: str) -> go.Figure:
    """The map with one cluster isolated: its points in colour under ``title`` (drawn, whatever
    the sample of a large map), the rest grey."""
    members = {int(i) for i in ids}
    name = f"candidate: {title}"
    gold = [(name,) if i in members else g for i, g in zip(view.ids, view.gold, strict=True)]
    return map_figure(dataclasses.replace(view, gold=gold), focus=[name], names=True, keep=ids)
