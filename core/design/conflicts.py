"""Conflicts in labelled data, from vectors and labels only (plain records of row positions):

* **near-duplicates with different intents**: two rows at least ``duplicate_threshold`` cosine
  apart whose intents differ; the row the rest of the data agrees with less is the one to change;
* **likely mislabels**: cleanlab's ``find_label_issues`` on the out-of-fold probabilities of
  :mod:`core.design.out_of_fold` (temperature-calibrated), ranked by self-confidence (the
  probability of the given intent), keeping the confident disagreements: the other folds predict
  another intent and give the given one less than :data:`CONFIDENT`; single-intent rows only;
* **overlapping intent pairs**: how often each intent's rows are predicted as the other out of
  fold and how close the two intents' centres are, with the rows most drawn to the other intent;
  computed without the likely mislabels (a flipped label is not an overlap, and in the pool it
  would draw its true intent's rows towards the wrong one).

Every record has a ``severity`` in ``[0, 1]`` (higher first) so one list ranks all three.

Example:
    >>> v = np.array([[1, 0, 0], [0.999, 0.04, 0], [0, 1, 0], [0, 0.99, 0.1]], dtype=np.float32)
    >>> [(d.keep, d.change) for d in near_duplicates(v, ["a", "b", "c", "c"])]
    [(0, 1)]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from core.design.out_of_fold import CHUNK, OutOfFold, out_of_fold
from core.retrieval.factory import PredictorFactory
from core.retrieval.knn import normalise

# A likely mislabel: the other folds give its intent less than this (calibrated) probability.
# On BANKING77 10-shot with 5 % flipped labels (bench/conflicts.py) cleanlab alone flags
# ~1.8x the flips (precision ~57 %); this rule keeps ~98 % of the flips at ~81 % precision.
CONFIDENT = 0.01
DUPLICATE_THRESHOLD = 0.92  # cosine at or above which two utterances say the same thing
MAX_DUPLICATES = 500
MAX_OVERLAPS = 100
CLOSE_CENTRES = 0.85  # intents whose centres are this similar overlap even when never confused
CONFUSABLE = 3  # the most confusable examples shown per side of an overlapping pair


@dataclass(frozen=True)
class NearDuplicate:
    """Rows ``keep`` and ``change`` say nearly the same but carry different intents; ``change``
    is the one whose own intent the other rows support less (out of fold)."""

    keep: int
    change: int
    similarity: float

    @property
    def severity(self) -> float:
        return self.similarity


@dataclass(frozen=True)
class LabelIssue:
    """Row ``row`` is labelled ``given`` but the other folds say ``suggested``."""

    row: int
    given: str
    suggested: str
    given_probability: float
    suggested_probability: float

    @property
    def severity(self) -> float:
        return 1.0 - self.given_probability


@dataclass(frozen=True)
class Confusable:
    """A row of ``source`` that reads like ``toward``: ``margin`` = its out-of-fold score for
    ``toward`` minus its score for ``source`` (above 0: predicted as ``toward``)."""

    row: int
    source: str
    toward: str
    margin: float


@dataclass(frozen=True)
class IntentOverlap:
    """Intents ``a`` and ``b`` (``a`` the smaller: the one to merge away) overlap."""

    a: str
    b: str
    a_as_b: int  # rows of a predicted as b, out of fold
    b_as_a: int
    n_a: int
    n_b: int
    centroid_similarity: float
    examples: tuple[Confusable, ...]

    @property
    def confusion_rate(self) -> float:
        return (self.a_as_b + self.b_as_a) / max(1, self.n_a + self.n_b)

    @property
    def severity(self) -> float:
        """Half how often the two are confused (a rate of 50 % counts in full), half how close
        their centres are (cosine 0.5 counts nothing, 1.0 in full)."""
        confused = min(1.0, 2 * self.confusion_rate)
        close = float(np.clip((self.centroid_similarity - 0.5) / 0.5, 0.0, 1.0))
        return 0.5 * confused + 0.5 * close

    def moves(self) -> tuple[Confusable, ...]:
        """The examples of ``a`` that the other folds predict as ``b`` (what "move" relabels)."""
        return tuple(e for e in self.examples if e.source == self.a and e.margin > 0)


@dataclass(frozen=True)
class ConflictReport:
    duplicates: tuple[NearDuplicate, ...]
    label_issues: tuple[LabelIssue, ...]
    overlaps: tuple[IntentOverlap, ...]
    oof: OutOfFold

    def ranked(self) -> list[NearDuplicate | LabelIssue | IntentOverlap]:
        """All conflicts, most severe first (ties: duplicates, mislabels, overlaps)."""
        items: list[NearDuplicate | LabelIssue | IntentOverlap] = [
            *self.duplicates,
            *self.label_issues,
            *self.overlaps,
        ]
        return sorted(items, key=lambda c: -c.severity)


def _sets(labels: Sequence[str] | Sequence[Sequence[str]]) -> list[tuple[str, ...]]:
    return [(x,) if isinstance(x, str) else tuple(sorted(x)) for x in labels]


def _own_probability(oof: OutOfFold, sets: Sequence[tuple[str, ...]]) -> np.ndarray:
    cols = [[oof.column(n) for n in s] for s in sets]
    return np.array([oof.probabilities[i, c].sum() for i, c in enumerate(cols)])


def near_duplicates(
    vectors: np.ndarray,
    labels: Sequence[str] | Sequence[Sequence[str]],
    *,
    threshold: float = DUPLICATE_THRESHOLD,
    own_probability: np.ndarray | None = None,
    limit: int = MAX_DUPLICATES,
) -> list[NearDuplicate]:
    """Pairs of rows at least ``threshold`` similar whose intents differ, most similar first.

    ``own_probability`` (per row, how much the other folds support its own intents) picks the row
    to change; without it, the later row is."""
    sets = _sets(labels)
    data = normalise(np.asarray(vectors, dtype=np.float32))
    found: list[NearDuplicate] = []
    for start in range(0, len(data), CHUNK):
        sims = data[start : start + CHUNK] @ data.T
        for r, c in zip(*np.nonzero(sims >= threshold), strict=True):
            i, j = start + int(r), int(c)
            if j <= i or sets[i] == sets[j]:
                continue
            keep, change = i, j
            if own_probability is not None and own_probability[i] < own_probability[j]:
                keep, change = j, i
            found.append(NearDuplicate(keep, change, float(sims[r, c])))
    found.sort(key=lambda d: (-d.similarity, d.keep, d.change))
    return found[:limit]


def label_issues(
    oof: OutOfFold,
    labels: Sequence[str] | Sequence[Sequence[str]],
    *,
    confident: float = CONFIDENT,
) -> list[LabelIssue]:
    """Single-intent rows that cleanlab flags on the out-of-fold probabilities (its
    ``low_self_confidence`` filter: the least self-confident rows, as many as it estimates are
    mislabelled) and that the other folds confidently put elsewhere (their own intent below
    ``confident``), least self-confident first. Rows whose intent has no example in the other
    folds cannot be judged and are never flagged."""
    from cleanlab.filter import find_label_issues

    sets = _sets(labels)
    rows = [i for i, s in enumerate(sets) if len(s) == 1 and oof.scores[i, oof.column(s[0])] > -1.0]
    given = np.array([oof.column(sets[i][0]) for i in rows], dtype=np.int64)
    if len(rows) < 2 or len(set(given.tolist())) < 2:
        return []
    probs = oof.probabilities[rows]
    probs = probs / probs.sum(axis=1, keepdims=True)
    flagged = find_label_issues(
        given,
        probs,
        filter_by="low_self_confidence",
        return_indices_ranked_by="self_confidence",
        n_jobs=1,
    )
    out = []
    for pos in flagged:
        p = probs[int(pos)]
        best = int(np.argmax(p))
        if best == given[pos] or p[given[pos]] >= confident:
            continue
        out.append(
            LabelIssue(
                rows[int(pos)],
                oof.intents[given[pos]],
                oof.intents[best],
                float(p[given[pos]]),
                float(p[best]),
            )
        )
    return out


def _confusable(
    oof: OutOfFold, sets: Sequence[tuple[str, ...]], source: str, toward: str
) -> list[Confusable]:
    s, t = oof.column(source), oof.column(toward)
    rows = [i for i, labs in enumerate(sets) if source in labs and toward not in labs]
    margins = oof.scores[rows, t] - oof.scores[rows, s]
    order = np.argsort(-margins, kind="stable")[:CONFUSABLE]
    return [Confusable(rows[o], source, toward, float(margins[o])) for o in order]


def overlapping_intents(
    vectors: np.ndarray,
    labels: Sequence[str] | Sequence[Sequence[str]],
    oof: OutOfFold,
    *,
    close: float = CLOSE_CENTRES,
    limit: int = MAX_OVERLAPS,
) -> list[IntentOverlap]:
    """Intent pairs that the other folds confuse at least once or whose centres are at least
    ``close`` similar, most severe first."""
    sets = _sets(labels)
    data = normalise(np.asarray(vectors, dtype=np.float32))
    n = {name: 0 for name in oof.intents}
    member: dict[str, list[int]] = {name: [] for name in oof.intents}
    for i, s in enumerate(sets):
        for name in s:
            n[name] += 1
            member[name].append(i)
    centres = normalise(np.stack([data[member[name]].mean(axis=0) for name in oof.intents]))
    confused: dict[tuple[str, str], int] = {}
    for s, p in zip(sets, oof.predicted, strict=True):
        if p in s:
            continue
        for g in s:
            confused[(g, p)] = confused.get((g, p), 0) + 1
    pairs = {tuple(sorted(key)) for key in confused}
    centre_sims = centres @ centres.T
    for x, y in zip(*np.nonzero(np.triu(centre_sims, 1) >= close), strict=True):
        pairs.add((oof.intents[int(x)], oof.intents[int(y)]))
    out = []
    for x, y in pairs:
        a, b = (x, y) if (n[x], y) <= (n[y], x) else (y, x)  # a: the smaller intent
        sim = float(centre_sims[oof.column(a), oof.column(b)])
        examples = _confusable(oof, sets, a, b) + _confusable(oof, sets, b, a)
        out.append(
            IntentOverlap(
                a,
                b,
                confused.get((a, b), 0),
                confused.get((b, a), 0),
                n[a],
                n[b],
                sim,
                tuple(examples),
            )
        )
    out.sort(key=lambda o: (-o.severity, o.a, o.b))
    return out[:limit]


def find_conflicts(
    vectors: np.ndarray,
    labels: Sequence[str] | Sequence[Sequence[str]],
    *,
    factory: PredictorFactory | None = None,
    folds: int = 5,
    seed: int = 0,
    duplicate_threshold: float = DUPLICATE_THRESHOLD,
) -> ConflictReport:
    """The three kinds of conflicts of a labelled set (see the module's docstring).

    Args:
        vectors: ``(n, d)`` vectors of the labelled rows.
        labels: each row's intent or label set (at least one intent per row).
        folds: out-of-fold splits (at most the number of rows).
        seed: the fold shuffle.
        factory: the project's :class:`~core.retrieval.factory.PredictorFactory` (its rule,
            ``k`` and anchors score the rows out of fold; None: the defaults).
        duplicate_threshold: cosine from which two rows count as near-duplicates.
    """
    sets = _sets(labels)
    oof = out_of_fold(vectors, sets, factory=factory, folds=min(folds, len(sets)), seed=seed)
    issues = label_issues(oof, sets)
    dups = near_duplicates(
        vectors, sets, threshold=duplicate_threshold, own_probability=_own_probability(oof, sets)
    )
    overlaps = _overlaps_without(vectors, sets, oof, issues, factory, seed)
    return ConflictReport(tuple(dups), tuple(issues), overlaps, oof)


def _overlaps_without(
    vectors: np.ndarray,
    sets: list[tuple[str, ...]],
    oof: OutOfFold,
    issues: Sequence[LabelIssue],
    factory: PredictorFactory | None,
    seed: int = 0,
) -> tuple[IntentOverlap, ...]:
    """:func:`overlapping_intents` of the rows that are not likely mislabels (row positions
    those of the whole input)."""
    if not issues:
        return tuple(overlapping_intents(vectors, sets, oof))
    flagged = {x.row for x in issues}
    keep = [i for i in range(len(sets)) if i not in flagged]
    sub_sets = [sets[i] for i in keep]
    folds = min(len(set(oof.folds.tolist())), len(keep))
    if folds < 2:
        return ()
    sub = out_of_fold(
        vectors[keep],
        sub_sets,
        factory=factory,
        folds=folds,
        seed=seed,
        temperature=oof.temperature,
    )
    return tuple(
        replace(o, examples=tuple(replace(e, row=keep[e.row]) for e in o.examples))
        for o in overlapping_intents(vectors[keep], sub_sets, sub)
    )
