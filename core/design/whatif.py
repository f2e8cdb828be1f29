"""Merge and split what-ifs: how would accuracy and confusion change if two intents became one,
or one intent became several? Estimated, not retrained: out-of-fold k-NN predictions on the
current embeddings (:func:`core.evaluation.cross_validate_knn`), before and after renaming the
labels, on the *same* folds (those of the real labels), so the two numbers differ by the renaming
only. A merge can instead be scored on a test split (:func:`merge_estimate` from two
evaluations, before and after :func:`merge_labels`): the same predictions as the confusion
matrix of that evaluation, so its "confused" count is that matrix's two off-diagonal cells. A split's parts are proposed by k-means on the intent's examples (2 to 4 parts, the count
with the best cosine silhouette), named by their distinctive words (:mod:`core.design.clusters`).

Example:
    >>> vecs = np.array([[1, 0], [1, .1], [.9, .1], [.1, 1], [0, 1], [.1, .9]], dtype=np.float32)
    >>> w = merge_whatif(vecs, ["a", "a", "a", "b", "b", "b"], "a", "b", folds=3)
    >>> w.accuracy_before, w.accuracy_after
    (1.0, 1.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from core.design.clusters import distinctive_words
from core.evaluation import CV_FOLDS, cross_validate_knn
from core.evaluation.version_metrics import VersionMetrics
from core.folds import fold_assignments
from core.retrieval.factory import PredictorFactory
from core.retrieval.knn import normalise

Labels = str | Sequence[str]  # one intent, or the label set of a row
MIN_SPLIT = 6  # an intent needs this many examples to be split
MAX_PARTS = 4


@dataclass(frozen=True)
class Part:
    """One proposed part of a split intent."""

    name: str
    members: tuple[int, ...]  # row indices, most central first
    keywords: tuple[str, ...]

    @property
    def size(self) -> int:
        return len(self.members)


@dataclass(frozen=True)
class WhatIf:
    """The estimate of a merge or a split (accuracies over the same out-of-fold predictions)."""

    kind: str  # "merge" or "split"
    before: tuple[str, ...]  # the intents as they are
    after: tuple[str, ...]  # the intent(s) they would become
    n: int
    folds: int
    accuracy_before: float
    accuracy_after: float
    macro_f1_before: float
    macro_f1_after: float
    # examples of one of the intents involved predicted as another of them (before for a merge:
    # what the merge removes; after for a split: what the split would add)
    confused: int
    # (gold, predicted, count) of the confusions touching the intent(s) after, biggest first
    confusions_after: list[tuple[str, str, int]] = field(default_factory=list)
    parts: list[Part] = field(default_factory=list)
    scored_on: str = "cv"  # "cv": out of fold over the labelled pool; "test": the test split

    @property
    def delta(self) -> float:
        return self.accuracy_after - self.accuracy_before

    def summary(self) -> str:
        """One sentence for the designer.

        Example:
            >>> WhatIf("merge", ("a", "b"), ("a+b",), 100, 5, 0.8, 0.85, 0.8, 0.86, 4).summary()
            'Merging a and b: estimated accuracy 80.0% → 85.0% (+5.0 points) over 100 labelled examples (5-fold, no retraining); 4 examples confused between them now would stop counting as errors.'
        """
        over = (
            f"over {self.n} test utterances (the predictions of the Evaluation's confusion "
            "matrix, no retraining)"
            if self.scored_on == "test"
            else f"over {self.n} labelled examples ({self.folds}-fold, no retraining)"
        )
        change = (
            f"estimated accuracy {self.accuracy_before:.1%} → {self.accuracy_after:.1%} "
            f"({100 * self.delta:+.1f} points) {over}"
        )
        if self.kind == "merge":
            return (
                f"Merging {' and '.join(self.before)}: {change}; {_examples(self.confused)} "
                "confused between them now would stop counting as errors."
            )
        return (
            f"Splitting {self.before[0]} into {len(self.after)} parts: {change}; "
            f"{_examples(self.confused)} would be confused between the parts."
        )


def _examples(n: int) -> str:
    return f"{n} example" if n == 1 else f"{n} examples"


def _label_set(labels: Labels) -> tuple[str, ...]:
    return (labels,) if isinstance(labels, str) else tuple(sorted(labels))


def _rename(sets: list[tuple[str, ...]], rows: Sequence[int], old: str, new: str) -> None:
    for i in rows:
        sets[i] = tuple(sorted({new if name == old else name for name in sets[i]}))


def _pairs(metrics: VersionMetrics, involving: set[str]) -> list[tuple[str, str, int]]:
    names = metrics.confusion["labels"]
    matrix = metrics.confusion["matrix"]
    out = [
        (g, p, int(matrix[i][j]))
        for i, g in enumerate(names)
        for j, p in enumerate(names)
        if i != j and matrix[i][j] and (g in involving or p in involving)
    ]
    return sorted(out, key=lambda t: (-t[2], t[0], t[1]))


def _between(metrics: VersionMetrics, group: set[str]) -> int:
    return sum(c for g, p, c in _pairs(metrics, group) if g in group and p in group)


def _estimate(
    vectors: np.ndarray,
    sets: list[tuple[str, ...]],
    renamed: list[tuple[str, ...]],
    folds: int,
    seed: int,
    k: int,
) -> tuple[VersionMetrics, VersionMetrics]:
    if len(vectors) != len(sets):
        raise ValueError("vectors and labels differ in length.")
    assign = fold_assignments(sets, folds, seed=seed)
    factory = PredictorFactory.for_vectors(vectors.shape[1], k=k)
    before = cross_validate_knn(factory, vectors, sets, folds=folds, assign=assign)
    after = cross_validate_knn(factory, vectors, renamed, folds=folds, assign=assign)
    return VersionMetrics.from_dict(before), VersionMetrics.from_dict(after)


def _check_known(sets: list[tuple[str, ...]], *intents: str) -> None:
    known = {name for s in sets for name in s}
    for name in intents:
        if name not in known:
            raise ValueError(f"No labelled examples of intent {name!r}: pick one that has some.")


def merge_labels(labels: Sequence[Labels], a: str, b: str) -> list[tuple[str, ...]]:
    """The label sets with intents ``a`` and ``b`` renamed to one, ``a+b``.

    Example:
        >>> merge_labels(["a", ("b", "c"), "c"], "a", "b")
        [('a+b',), ('a+b', 'c'), ('c',)]
    """
    sets = [_label_set(x) for x in labels]
    merged = f"{a}+{b}"
    rows = [i for i, s in enumerate(sets) if a in s or b in s]
    _rename(sets, rows, a, merged)
    _rename(sets, rows, b, merged)
    return sets


def merge_estimate(
    a: str, b: str, before: VersionMetrics, after: VersionMetrics, *, scored_on: str = "test"
) -> WhatIf:
    """The merge what-if from two evaluations of the same predictions' rule: ``before`` on the
    real labels, ``after`` on :func:`merge_labels` of them (train and test alike). ``confused``
    is ``before``'s confusion matrix at (a, b) plus (b, a)."""
    return WhatIf(
        "merge",
        (a, b),
        (f"{a}+{b}",),
        before.n or 0,
        before.folds or 0,
        before.accuracy or 0.0,
        after.accuracy or 0.0,
        before.macro_f1 or 0.0,
        after.macro_f1 or 0.0,
        _between(before, {a, b}),
        _pairs(after, {f"{a}+{b}"}),
        scored_on=scored_on,
    )


def merge_whatif(
    vectors: np.ndarray,
    labels: Sequence[Labels],
    a: str,
    b: str,
    *,
    folds: int = CV_FOLDS,
    seed: int = 0,
    k: int = 1,
) -> WhatIf:
    """Accuracy and confusion if intents ``a`` and ``b`` became one (``a+b``), out of fold over
    the labelled pool (no test split to score on).

    Raises:
        ValueError: ``a == b``, an intent with no examples, or too few examples for the folds.
    """
    if a == b:
        raise ValueError(f"Pick two different intents to merge (both are {a!r}).")
    sets = [_label_set(x) for x in labels]
    _check_known(sets, a, b)
    before, after = _estimate(vectors, sets, merge_labels(sets, a, b), folds, seed, k)
    return merge_estimate(a, b, before, after, scored_on="cv")


def propose_parts(
    vectors: np.ndarray, texts: Sequence[str], *, parts: int | None = None, seed: int = 0
) -> list[tuple[tuple[int, ...], tuple[str, ...]]]:
    """Sub-clusters of one intent's examples: (row indices most central first, keywords) per
    part, biggest first. ``parts=None`` picks 2 to 4 by the best cosine silhouette."""
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    unit = normalise(np.asarray(vectors, dtype=np.float32))
    n = len(unit)
    choices = [parts] if parts else list(range(2, min(MAX_PARTS, n // 3) + 1))
    if not choices or choices[0] < 2 or choices[0] > n // 2:
        raise ValueError(f"Cannot split {n} examples into {parts or 2} parts of 2 or more.")
    best: tuple[float, np.ndarray] | None = None
    for c in choices:
        assign = KMeans(n_clusters=c, n_init=4, random_state=seed).fit_predict(unit)
        if len(set(assign.tolist())) < 2:
            continue
        score = float(silhouette_score(unit, assign, metric="cosine"))
        if best is None or score > best[0]:
            best = (score, assign)
    if best is None:
        raise ValueError("These examples are too alike to split: every one landed in one part.")
    assign = best[1]
    words = distinctive_words(texts, assign.tolist())
    out = []
    for c in sorted(set(assign.tolist())):
        idx = np.flatnonzero(assign == c)
        centre = normalise(unit[idx].mean(axis=0))[0]
        order = idx[np.argsort(-(unit[idx] @ centre), kind="stable")]
        out.append((tuple(int(i) for i in order), words.get(c, ())))
    return sorted(out, key=lambda p: (-len(p[0]), p[0][0]))


def split_whatif(
    vectors: np.ndarray,
    labels: Sequence[Labels],
    texts: Sequence[str],
    intent: str,
    *,
    parts: int | None = None,
    folds: int = CV_FOLDS,
    seed: int = 0,
    k: int = 1,
) -> WhatIf:
    """Proposed parts of ``intent`` (:func:`propose_parts`, named ``intent/1``, ``intent/2``, …)
    and the accuracy and confusion if it were split into them.

    Raises:
        ValueError: an intent with fewer than :data:`MIN_SPLIT` examples, or too few for the folds.
    """
    sets = [_label_set(x) for x in labels]
    _check_known(sets, intent)
    rows = [i for i, s in enumerate(sets) if intent in s]
    if len(rows) < MIN_SPLIT:
        raise ValueError(
            f"Intent {intent!r} has {len(rows)} labelled examples; a split needs at least "
            f"{MIN_SPLIT}."
        )
    found = propose_parts(
        np.asarray(vectors)[rows], [texts[i] for i in rows], parts=parts, seed=seed
    )
    renamed = list(sets)
    proposed: list[Part] = []
    for number, (members, keywords) in enumerate(found, start=1):
        part = Part(f"{intent}/{number}", tuple(rows[i] for i in members), keywords)
        _rename(renamed, part.members, intent, part.name)
        proposed.append(part)
    before, after = _estimate(vectors, sets, renamed, folds, seed, k)
    names = {p.name for p in proposed}
    return WhatIf(
        "split",
        (intent,),
        tuple(p.name for p in proposed),
        len(sets),
        folds,
        before.accuracy or 0.0,
        after.accuracy or 0.0,
        before.macro_f1 or 0.0,
        after.macro_f1 or 0.0,
        _between(after, names),
        _pairs(after, names),
        proposed,
    )
