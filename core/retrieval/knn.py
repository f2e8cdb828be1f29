"""Intent classification over the labelled pool: nearest example plus prototype.

The pool *is* the classifier: adding a labelled example changes the next prediction at once.
:class:`KnnIndex` is the vector store (:class:`~core.retrieval.store.VectorStore`: the examples
in a faiss index, each intent's prototype and anchor) with the rule (:mod:`core.retrieval.rule`:
every intent's score at once, and their one ranking) as its methods: :meth:`KnnIndex.classify`
explains questions from the rule's scores, :meth:`KnnIndex.tops` ranks many without the
evidence, :meth:`KnnIndex.score_matrix` scores a whole fold against every example.

Scores (:data:`DEFAULT_RULE`, ``"nearest+prototype"``): an intent's score is the mean of two
cosines, its nearest example's (the mean of its ``k`` nearest with ``k > 1``) and its
prototype's. On BANKING77 and CLINC150, 10 and 5 shots, frozen and tuned MiniLM, it beats
ConvFiT's 1-NN (``"nearest"``, still available) in the median of 3 seeds of every cell, by 0.4 to
5.1 points (``bench/rules.py``), with nothing to fit or tune: one example close by chance no longer
outvotes an intent whose examples all sit near the question. Every ranked intent
keeps both parts (``nearest``, ``prototype``) and its nearest examples, so what decided is what an
explanation shows. Intent names and descriptions may join as *anchors*
(:mod:`core.retrieval.anchors`, :meth:`KnnIndex.set_anchors`): weighted into the prototypes, and
the only evidence of an intent without examples (cold start).

Example:
    >>> idx = KnnIndex(dim=2)
    >>> idx.add([1, 2], np.eye(2, dtype=np.float32), ["hi", "bye"], [("greet",), ("bye",)])
    >>> idx.classify(np.array([[0.9, 0.1]], dtype=np.float32))[0].top
    'greet'
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.portable import search_width
from core.retrieval.anchors import ANCHOR_ID
from core.retrieval.rule import Tops, order, score, tops
from core.retrieval.scores import (
    AMBIGUOUS_MARGIN,
    DEFAULT_RULE,
    EVIDENCE,
    EXACT,
    NEAREST,
    NEAREST_PROTOTYPE,
    RULES,
    IntentScore,
    Neighbour,
    Prediction,
    Score,
    check_rule,
    combine,
)
from core.retrieval.store import VectorStore, normalise

__all__ = [
    "AMBIGUOUS_MARGIN",
    "DEFAULT_RULE",
    "EVIDENCE",
    "EXACT",
    "NEAREST",
    "NEAREST_PROTOTYPE",
    "RULES",
    "IntentScore",
    "KnnIndex",
    "Neighbour",
    "Prediction",
    "Score",
    "check_rule",
    "combine",
    "normalise",
]


def _optional(value: float) -> float | None:
    return None if np.isnan(value) else value


class KnnIndex(VectorStore):
    """A mutable labelled pool that ranks intents by the rule (:mod:`core.retrieval.rule`)."""

    def score_matrix(
        self, queries: np.ndarray, *, k: int = 1, rule: str = DEFAULT_RULE
    ) -> tuple[list[str], np.ndarray]:
        """Every intent's score for every query by ``rule`` over the whole pool (no search
        depth: :func:`core.retrieval.rule.score` with ``depth=None``): the intents (those with
        examples and anchored ones without, by name) and the ``(queries, intents)`` scores.
        For many queries against every intent at once (out-of-fold scores of a whole labelled
        set); :meth:`classify` explains one question.

        Example:
            >>> idx = KnnIndex(dim=2)
            >>> idx.add([1, 2], np.eye(2, dtype=np.float32), ["a", "b"], [("x",), ("y",)])
            >>> names, m = idx.score_matrix(np.array([[1.0, 0.0]]))
            >>> names, m.round(2).tolist()
            (['x', 'y'], [[1.0, 0.0]])
        """
        found = score(self, queries, k=k, rule=rule)
        return found.intents, found.score

    def tops(
        self,
        queries: np.ndarray,
        *,
        k: int = 1,
        show: int = 0,
        depth: int = 200,
        exclude_ids: Sequence[int | None] | None = None,
        rule: str = DEFAULT_RULE,
    ) -> Tops:
        """What :meth:`classify` with the same arguments puts first for each query (the top
        intent, its score, the margin, whether cold), without its evidence: for many queries."""
        width = search_width(depth, show, k)
        return tops(self, queries, k=k, depth=width, exclude_ids=exclude_ids, rule=rule)

    def classify(
        self,
        queries: np.ndarray,
        *,
        k: int = 1,
        show: int = 5,
        depth: int = 200,
        exclude_ids: Sequence[int | None] | None = None,
        rule: str = DEFAULT_RULE,
    ) -> list[Prediction]:
        """Rank intents for each query by ``rule`` (see the module doc), each with the evidence
        behind its score.

        Args:
            queries: ``(n, dim)`` vectors.
            k: examples per intent that make its nearest-example part (1 = nearest neighbour).
            show: how many overall nearest neighbours to return as evidence.
            depth: how many neighbours to look at; intents with no example among them are unranked.
            exclude_ids: per query, a pool id to leave out (leave-one-out scoring of pool items:
                out of its intents' prototypes too).
            rule: :data:`NEAREST_PROTOTYPE` (default) or :data:`NEAREST`.
        """
        with self.lock:
            found = score(
                self,
                queries,
                k=k,
                depth=search_width(depth, show, k),
                exclude_ids=exclude_ids,
                rule=rule,
            )
            skips = [None] * len(found.score) if exclude_ids is None else list(exclude_ids)
            lists = [
                self.neighbours(s, i, skip)
                for s, i, skip in zip(found.sims, found.ids, skips, strict=True)
            ]
            anchors = self.anchors()
        names = found.intents
        ranking = order(found.score).tolist()
        preds: list[Prediction] = []
        for qi, hits in enumerate(lists):
            per_intent: dict[str, list[Neighbour]] = {}
            for h in hits:
                for name in h.labels:
                    per_intent.setdefault(name, []).append(h)
            row, scored = found.score[qi].tolist(), []
            for j in ranking[qi]:
                name = names[j]
                if row[j] == -np.inf:
                    break
                a = _optional(float(found.anchor[qi, j]))
                if name in found.cold:
                    best = Neighbour(ANCHOR_ID, anchors[name], (name,), row[j])
                    scored.append(IntentScore(name, row[j], best, anchor=a))
                    continue
                hs = per_intent[name]
                nearest, p = float(found.nearest[qi, j]), _optional(float(found.prototype[qi, j]))
                size = int(found.size[qi, j])
                scored.append(
                    IntentScore(name, row[j], hs[0], nearest, p, size, tuple(hs[:EVIDENCE]), a)
                )
            preds.append(Prediction(scored, hits[:show]))
        return preds
