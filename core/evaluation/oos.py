"""Out of scope: when the evidence is too weak, a prediction names no intent.

The labelled pool calibrates its own thresholds. Each labelled example is scored *out of fold*
(by the pool of the other folds, :func:`core.design.out_of_fold.out_of_fold`, with the same
k-NN rule the predictor uses); the scores of the examples that land on their own intent are how
similar an in-scope question of that intent looks. An intent's threshold is the highest score that
still accepts ``target_recall`` of them (the project's trade-off, 95 % by default): a question whose
top intent scores below its intent's threshold is *out of scope*. By default (:data:`PER_INTENT`)
every intent uses the threshold of the whole pool's scores, the best on the benchmark; per-intent
thresholds are shrunk toward it by their number of scores (:data:`SHRINK`).

Examples the designer labels :data:`OUT_OF_SCOPE` (a reserved label: never a class, no minimum
count) sharpen this: the target recall is a floor, and below it the threshold sits where the
in-scope examples accepted plus the out-of-scope examples rejected are the most (one rule,
:func:`choose_threshold`, for the whole pool and for each intent).

With per-intent thresholds, an intent with fewer than :data:`MIN_SCORES` such scores (one
example: nothing to score it against) uses the project-wide threshold, and the calibration says so.

Example:
    >>> import numpy as np
    >>> vecs = np.array([[1, 0], [0.9, 0.1], [0.95, 0.05], [0, 1], [0.1, 0.9], [0.05, 0.95]])
    >>> labels = [("a",), ("a",), ("a",), ("b",), ("b",), ("b",)]
    >>> sorted(calibrate(vecs, labels, folds=3).thresholds)
    ['default']
    >>> cal = calibrate(vecs, labels, folds=3, per_intent=True)
    >>> sorted(cal.thresholds), cal.fallback
    (['a', 'b', 'default'], ())
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.design.out_of_fold import UNSCORED, out_of_fold
from core.evaluation.scope import OUT_OF_SCOPE, in_scope_labels
from core.retrieval.knn import DEFAULT_RULE, KnnIndex, Prediction

__all__ = [
    "OUT_OF_SCOPE",
    "Calibration",
    "calibrate",
    "check_target_recall",
    "choose_threshold",
    "in_scope_labels",
    "out_of_fold_scores",
    "thresholds_from_scores",
]

DEFAULT_TARGET_RECALL = 0.95
# An intent needs this many out-of-fold scores of its own for a threshold of its own.
MIN_SCORES = 3
CALIBRATION_FOLDS = 5
# Labelled test questions needed to calibrate from them rather than from the pool's out-of-fold
# scores (see :func:`calibrate`).
MIN_HELD_OUT = 20
# One project-wide threshold by default: on CLINC150 (bench/oos.py, 10-shot pool, frozen and
# tuned MiniLM) it gave the best in-scope accuracy and OOS precision and kept the target in-scope
# recall best; per-intent thresholds from ~10 scores each were the noisiest (in-scope accuracy
# -6 and -10 points), and shrinking them toward the global one only approached it.
PER_INTENT = False
# With per-intent thresholds: pseudo-scores of the project-wide threshold mixed into each
# intent's own (20: the best AUROC of 5, 10, 20, 40, 80 on the frozen pool).
SHRINK = 20.0


def check_target_recall(value: float) -> float:
    """The target in-scope recall as a fraction in [0.5, 1].

    Example:
        >>> check_target_recall(0.9)
        0.9
    """
    value = float(value)
    if not 0.5 <= value <= 1.0 or math.isnan(value):
        raise ValueError(
            f"The target in-scope recall must be between 0.5 and 1 (e.g. 0.95), got {value}."
        )
    return value


def choose_threshold(
    positives: Sequence[float],
    negatives: Sequence[float] = (),
    target_recall: float = DEFAULT_TARGET_RECALL,
) -> float:
    """The minimum score to accept, from in-scope scores (``positives``) and out-of-scope ones.

    Without negatives: the highest threshold that accepts ``target_recall`` of the positives.
    With negatives: at or below that, the threshold with the most positives accepted plus
    negatives rejected (each as a fraction of its kind); a tie goes to the lower threshold.

    Example:
        >>> choose_threshold([0.9, 0.8, 0.7, 0.6], target_recall=0.75)
        0.7
        >>> choose_threshold([0.9, 0.8, 0.7, 0.6], [0.3], target_recall=0.75)
        0.6
    """
    check_target_recall(target_recall)
    if not len(positives):
        raise ValueError("No in-scope scores to calibrate a threshold from.")
    pos = np.sort(np.asarray(positives, dtype=np.float64))[::-1]
    need = max(1, math.ceil(target_recall * len(pos) - 1e-9))
    ceiling = float(pos[need - 1])
    if not len(negatives):
        return ceiling
    neg = np.asarray(negatives, dtype=np.float64)
    candidates = np.unique(pos[pos <= ceiling])
    accepted = (pos[None, :] >= candidates[:, None]).mean(axis=1)
    rejected = (neg[None, :] < candidates[:, None]).mean(axis=1)
    gain = accepted + rejected
    return float(candidates[int(np.flatnonzero(gain >= gain.max() - 1e-12)[0])])


def out_of_fold_scores(
    vectors: np.ndarray,
    labels: Sequence[str],
    *,
    k: int = 1,
    folds: int = CALIBRATION_FOLDS,
    seed: int = 0,
    rule: str = DEFAULT_RULE,
) -> list[tuple[str | None, float]]:
    """Each example's top intent and score by the pool's rule over the other folds' examples.

    Example:
        >>> out_of_fold_scores(np.eye(2), ["a", "b"], folds=2)
        [('b', 0.0), ('a', 0.0)]
    """
    n = len(labels)
    if n < 2:
        return [(None, 0.0)] * n
    # the Conflicts view's out-of-fold scores: the one implementation (no softmax needed here)
    oof = out_of_fold(
        vectors, list(labels), folds=min(folds, n), seed=seed, k=k, temperature=1.0, rule=rule
    )
    best = oof.scores.argmax(axis=1)
    return [
        (oof.intents[j], float(oof.scores[i, j])) if oof.scores[i, j] > UNSCORED else (None, 0.0)
        for i, j in enumerate(best)
    ]


def thresholds_from_scores(
    own: dict[str, list[float]],
    negatives: dict[str, list[float]],
    target_recall: float = DEFAULT_TARGET_RECALL,
    *,
    per_intent: bool = True,
    shrink: float = SHRINK,
) -> tuple[float, dict[str, float], tuple[str, ...]]:
    """Thresholds from scored questions: ``own[intent]`` the scores of in-scope questions that
    landed on their own intent, ``negatives[intent]`` those of out-of-scope questions that landed
    on it. Returns the project-wide threshold, the thresholds (with ``"default"``) and the
    intents left on the project-wide one (fewer than :data:`MIN_SCORES` scores).

    An intent's own threshold, chosen from its ``n`` scores, is shrunk toward the project-wide
    one: ``(n * own + shrink * project) / (n + shrink)`` (``shrink=0``: its own alone).

    Example:
        >>> thresholds_from_scores({"a": [0.9, 0.8, 0.7], "b": [0.5]}, {}, 0.6, shrink=0)[1:]
        ({'default': 0.7, 'a': 0.8}, ('b',))
    """
    if not shrink >= 0:
        raise ValueError(f"shrink must be 0 or more, got {shrink}.")
    every = [s for values in own.values() for s in values]
    all_negatives = [s for values in negatives.values() for s in values]
    default = choose_threshold(every, all_negatives, target_recall)
    thresholds = {"default": default}
    fallback = []
    for name in sorted(own):
        n = len(own[name])
        if per_intent and n >= MIN_SCORES:
            alone = choose_threshold(own[name], negatives.get(name, ()), target_recall)
            # (n * alone + shrink * default) / (n + shrink), exactly ``alone`` when shrink is 0
            thresholds[name] = alone + shrink * (default - alone) / (n + shrink)
        else:
            fallback.append(name)
    return default, thresholds, tuple(fallback)


@dataclass(frozen=True)
class Calibration:
    """Thresholds (intent or ``"default"`` -> minimum score) and how they were made."""

    thresholds: dict[str, float]
    target_recall: float
    fallback: tuple[str, ...] = ()  # intents on the project-wide threshold (too few examples)
    n_scores: int = 0  # in-scope out-of-fold scores behind the project-wide threshold
    n_out_of_scope: int = 0  # examples labelled out of scope that were used
    notes: list[str] = field(default_factory=list)

    @property
    def default(self) -> float | None:
        return self.thresholds.get("default")

    def message(self) -> str:
        """One plain paragraph on what was calibrated.

        Example:
            >>> Calibration({}, 0.95, notes=["Nothing to calibrate."]).message()
            'Nothing to calibrate.'
        """
        return " ".join(self.notes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "thresholds": dict(self.thresholds),
            "target_recall": self.target_recall,
            "fallback": list(self.fallback),
            "n_scores": self.n_scores,
            "n_out_of_scope": self.n_out_of_scope,
            "notes": list(self.notes),
        }


def _classify(
    pool: np.ndarray, names: list[str], queries: np.ndarray, k: int, rule: str
) -> list[Prediction]:
    """``queries`` classified against the single-label pool (``pool``, ``names``)."""
    index = KnnIndex(pool.shape[1])
    index.add(list(range(len(names))), pool, [""] * len(names), [(n,) for n in names])
    return index.classify(np.asarray(queries), k=k, show=0, depth=max(20, 4 * k), rule=rule)


def calibrate(
    vectors: np.ndarray,
    labels: Sequence[Sequence[str]],
    *,
    out_of_scope: np.ndarray | None = None,
    target_recall: float = DEFAULT_TARGET_RECALL,
    k: int = 1,
    folds: int = CALIBRATION_FOLDS,
    seed: int = 0,
    per_intent: bool = PER_INTENT,
    shrink: float = SHRINK,
    rule: str = DEFAULT_RULE,
    held_out: tuple[np.ndarray, Sequence[str]] | None = None,
) -> Calibration:
    """Out-of-scope thresholds from a single-label pool (see the module doc): the project-wide
    one for every intent (the default), or per intent, shrunk toward it.

    Args:
        vectors: the pool's vectors, one row per example.
        labels: each example's label set (one intent; :data:`OUT_OF_SCOPE` rows are left out).
        out_of_scope: vectors of examples labelled out of scope (scored against the whole pool).
        target_recall: the share of in-scope questions to keep (0.5 to 1).
        k: the predictor's examples per intent.
        per_intent: True gives each intent with enough scores a threshold of its own.
        shrink: how far an intent's own threshold is pulled toward the project-wide one (see
            :func:`thresholds_from_scores`).
        rule: the predictor's decision rule (the thresholds are on its scores).
        held_out: vectors and intents of labelled questions outside the pool (the test split).
            When there are at least :data:`MIN_HELD_OUT`, their scores against the pool are
            used instead of the pool's out-of-fold scores: an encoder tuned on the pool pulls
            its own examples together, so out-of-fold scores of the pool run high and a
            threshold from them would send too many real questions to "no intent".
    """
    check_target_recall(target_recall)
    keep = [i for i, lab in enumerate(labels) if len(in_scope_labels(lab)) == 1]
    names = [in_scope_labels(labels[i])[0] for i in keep]
    vecs = np.asarray(vectors, dtype=np.float32)[keep] if keep else np.zeros((0, 1), np.float32)
    own: dict[str, list[float]] = {name: [] for name in names}
    source = "out-of-fold"
    if held_out is not None and len(held_out[1]) >= MIN_HELD_OUT and keep:
        source = "held-out test"
        gold = list(held_out[1])
        for name, pred in zip(gold, _classify(vecs, names, held_out[0], k, rule), strict=True):
            if pred.top == name and name in own:
                own[name].append(pred.score)
    else:
        scores = out_of_fold_scores(vecs, names, k=k, folds=folds, seed=seed, rule=rule)
        for name, (top, score) in zip(names, scores, strict=True):
            if top == name:
                own[name].append(score)
    negatives: dict[str, list[float]] = {}
    n_oos = 0 if out_of_scope is None else len(out_of_scope)
    if n_oos and keep:
        assert out_of_scope is not None
        for pred in _classify(vecs, names, out_of_scope, k, rule):
            if pred.top is not None:
                negatives.setdefault(pred.top, []).append(pred.score)
    every = [s for values in own.values() for s in values]
    if not every:
        return Calibration(
            {},
            target_recall,
            fallback=tuple(sorted(own)),
            n_out_of_scope=n_oos,
            notes=[
                "No out-of-scope threshold yet: it needs intents with at least 2 examples "
                "(a question is compared with an intent's other examples); every question gets "
                "its top intent until then."
            ],
        )
    default, thresholds, fallback = thresholds_from_scores(
        own, negatives, target_recall, per_intent=per_intent, shrink=shrink
    )
    notes = [
        f"Out-of-scope thresholds for a {target_recall:.0%} in-scope recall, from "
        f"{len(every)} {source} scores"
        + (f" and {n_oos} examples labelled {OUT_OF_SCOPE}" if n_oos else "")
        + f"; project-wide threshold {default:.2f}"
        + ("." if per_intent else ", for every intent.")
    ]
    if fallback and per_intent:
        shown = ", ".join(fallback[:5]) + (" …" if len(fallback) > 5 else "")
        notes.append(
            f"{len(fallback)} intent(s) with too few examples for a threshold of their own use "
            f"the project-wide one: {shown}."
        )
    return Calibration(thresholds, target_recall, fallback, len(every), n_oos, notes)
