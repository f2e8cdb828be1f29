"""Out of scope: when the evidence is too weak, a prediction names no intent.

The labelled `train` pool calibrates its own thresholds (the test split, which reports accuracy,
never does). Each labelled example is scored *out of fold*: by the serving pool's own code with
the example's fold left out (:func:`out_of_fold_scores`: the same anchors — the intents' names and
descriptions —, ``k`` and rule as the live :class:`~core.retrieval.predictor.Predictor`), so a
threshold is on the very scores the server produces. Those scores are how an in-scope question
scores: every example counts, whether its top intent is its own or not (a new in-scope question
the predictor gets wrong is in scope too, and scores lower; counting only the right ones set the
threshold too high: on BANKING77 and CLINC150, 3 seeds, frozen MiniLM, it flagged 6-8 % of
in-scope test questions against a 5 % target, this rule 4-5 %: ``bench/oos_calibration.py``).
An intent's threshold is the highest score that still accepts ``target_recall`` of the scores of
the examples whose top is that intent (the project's trade-off, 95 % by default): a question whose
top intent scores below the threshold is *out of scope*. Every intent uses the one threshold of
the whole pool's scores: per-intent thresholds (each intent's own, or shrunk toward the
project-wide one by its number of scores) flagged more in-scope questions at a lower precision on
BANKING77 and CLINC150, 3 seeds, frozen and retrained MiniLM (``bench/RESULTS.md``), and left.

A retrained encoder scores the examples it trained on higher than a new question of theirs, even
out of fold (the fold leaves the pool, not the encoder's training): on BANKING77 and CLINC150
this rule then flagged 10-14 % of in-scope questions. A :class:`Correction` (the held-out
calibration a retrain measured, :mod:`core.evaluation.held_out`) maps those examples' scores
onto the scores they get from encoders that never saw them, before the threshold is chosen;
examples labelled since score as they are (the encoder never saw them either).

Examples the designer labels :data:`OUT_OF_SCOPE` (a reserved label: never a class, no minimum
count) sharpen this: the target recall is a floor, and below it the threshold sits where the
in-scope examples accepted plus the out-of-scope examples rejected are the most
(:func:`choose_threshold`).

Example:
    >>> import numpy as np
    >>> vecs = np.array([[1, 0], [0.9, 0.1], [0.95, 0.05], [0, 1], [0.1, 0.9], [0.05, 0.95]])
    >>> labels = [("a",), ("a",), ("a",), ("b",), ("b",), ("b",)]
    >>> cal = calibrate(vecs, labels, folds=3)
    >>> sorted(cal.thresholds), cal.fallback
    (['default'], ('a', 'b'))
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from core.evaluation.calibration import Calibration, Correction, ScoreMap
from core.folds import fold_assignments
from core.retrieval.factory import Anchors, PredictorFactory
from core.retrieval.knn import DEFAULT_RULE
from core.retrieval.predictor import Predictor
from core.retrieval.rule import rank
from core.retrieval.scope import OUT_OF_SCOPE, in_scope_labels

__all__ = [
    "OUT_OF_SCOPE",
    "Calibration",
    "Correction",
    "ScoreMap",
    "calibrate",
    "calibrate_predictor",
    "check_target_recall",
    "choose_threshold",
    "in_scope_labels",
    "out_of_fold_scores",
    "scored_out_of_fold",
    "thresholds_from_scores",
]

DEFAULT_TARGET_RECALL = 0.95
CALIBRATION_FOLDS = 5
# The Label queue's hint: the share of the out-of-fold examples with the smallest margins that
# calibrate the threshold for uncertain questions, and the fewest such scores it needs.
UNCERTAIN_SHARE = 0.25
MIN_UNCERTAIN = 20


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
    predictor: Predictor, *, folds: int = CALIBRATION_FOLDS, seed: int = 0
) -> list[tuple[str, str | None, float, float]]:
    """Each single-label example of the serving ``predictor``'s pool: its intent, and the top
    intent, score and margin (over the runner-up) the predictor gives it with its fold left out
    (:meth:`~core.retrieval.predictor.Predictor.fold`: the same anchors, ``k`` and rule), so the
    scores are the ones a new question gets. A top intent scored by its anchor alone (cold
    start) is ``None``: the predictor takes it without a threshold.

    Example:
        >>> from core.retrieval.factory import vector_pool
        >>> out_of_fold_scores(vector_pool(np.eye(2), ["a", "b"]), folds=2)
        [('a', 'b', 0.0, 1.0), ('b', 'a', 0.0, 1.0)]
    """
    return [row[1:] for row in scored_out_of_fold(predictor, folds=folds, seed=seed)]


def scored_out_of_fold(
    predictor: Predictor, *, folds: int = CALIBRATION_FOLDS, seed: int = 0
) -> list[tuple[int, str, str | None, float, float]]:
    """:func:`out_of_fold_scores`, each row led by the example's pool id."""
    ids, _, sets, vectors = predictor.index.examples()
    single = [i for i, labels in enumerate(sets) if len(labels) == 1]
    if len(single) < 2:
        return [(ids[i], sets[i][0], None, 0.0, 0.0) for i in single]
    folds = min(folds, len(single))
    assign = np.full(len(ids), -1)
    # folds by id, not by the order examples joined the pool: a pool brought up to date example
    # by example calibrates as the same pool built at once (a start's, in id order) does
    by_id = sorted(single, key=lambda i: ids[i])
    assign[by_id] = fold_assignments([sets[i] for i in by_id], folds, seed=seed)
    out: dict[int, tuple[int, str, str | None, float, float]] = {}
    for f in range(folds):
        held = np.flatnonzero(assign == f)
        if not len(held):
            continue
        rest = np.flatnonzero(assign != f)
        pool = predictor.fold([ids[i] for i in rest])
        # every intent's score at once, as the fold's Predictor ranks them (its score_matrix:
        # classify's scores over the whole pool), ranked by the rule's one ranking
        names, scores = pool.score_matrix(vectors[held])
        warm = {name for i in rest for name in sets[i]}
        found = rank((names, scores), cold=set(names) - warm)
        for row, i in enumerate(held.tolist()):
            top = None if found.cold[row] else found.intents[row]  # cold: its anchor alone
            score = float(found.scores[row]) if top else 0.0
            out[i] = (ids[i], sets[i][0], top, score, float(found.margins[row]))
    return [out[i] for i in single]


def thresholds_from_scores(
    own: dict[str, list[float]],
    negatives: dict[str, list[float]],
    target_recall: float = DEFAULT_TARGET_RECALL,
) -> tuple[float, dict[str, float], tuple[str, ...]]:
    """The project-wide threshold from scored questions: ``own[intent]`` the scores of in-scope
    questions whose top is ``intent`` (its own or not), ``negatives[intent]`` those of
    out-of-scope questions whose top is it. Returns the threshold, the thresholds (``"default"``)
    and the intents that use it (every one).

    Example:
        >>> thresholds_from_scores({"a": [0.9, 0.8, 0.7], "b": [0.5]}, {}, 0.6)
        (0.7, {'default': 0.7}, ('a', 'b'))
    """
    every = [s for values in own.values() for s in values]
    all_negatives = [s for values in negatives.values() for s in values]
    default = choose_threshold(every, all_negatives, target_recall)
    return default, {"default": default}, tuple(sorted(own))


def calibrate_predictor(
    predictor: Predictor,
    *,
    out_of_scope: np.ndarray | None = None,
    target_recall: float = DEFAULT_TARGET_RECALL,
    folds: int = CALIBRATION_FOLDS,
    seed: int = 0,
    correction: Correction | None = None,
) -> Calibration:
    """Out-of-scope thresholds of a serving Predictor (see the module doc), from its own pool's
    examples scored out of fold by :func:`out_of_fold_scores` — the labelled `train` pool, never
    the test split that reports accuracy — with its anchors, ``k`` and rule: the thresholds are
    on the scores this predictor serves.

    Args:
        predictor: the serving Predictor (its anchors take part as they do in a prediction).
        out_of_scope: vectors of examples labelled out of scope (scored against the whole pool).
        target_recall: the share of in-scope questions to keep (0.5 to 1).
        correction: the scores of the examples its encoder trained on, as encoders that never
            saw them score them (:class:`Correction`; None: the pool's own scores).
    """
    check_target_recall(target_recall)
    rows = scored_out_of_fold(predictor, folds=folds, seed=seed)
    raw = [row[1:] for row in rows]
    scored, n_corrected = _corrected(rows, correction)
    # each in-scope example's score under its top intent (the one whose threshold decides it),
    # where its own intent had other examples to land on (one example: nothing to compare with)
    count = Counter(name for name, _, _, _ in scored)
    own, before = _by_top(scored, count), _by_top(raw, count)
    negatives: dict[str, list[float]] = {}
    n_oos = 0 if out_of_scope is None else len(out_of_scope)
    if n_oos and scored:
        assert out_of_scope is not None
        for pred in predictor.rank(np.asarray(out_of_scope), show=0):
            if pred.top is not None and not pred.intents[0].cold:
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
    default, thresholds, fallback = thresholds_from_scores(own, negatives, target_recall)
    anchored = " (with the intents' names and descriptions)" if predictor.index.anchors() else ""
    notes = [
        f"Out-of-scope thresholds for a {target_recall:.0%} in-scope recall, from "
        f"{len(every)} scores of the labelled training examples, each scored as a new question "
        f"by the other folds{anchored}"
        + (f", and {n_oos} examples labelled {OUT_OF_SCOPE}" if n_oos else "")
        + f"; the test split is not used. Project-wide threshold {default:.2f}, for every "
        "intent."
    ]
    uncorrected = None
    if correction is not None and n_corrected:
        uncorrected = thresholds_from_scores(before, negatives, target_recall)[0]
        notes.append(
            f"Calibrated by {correction.source}: the {n_corrected} scores of examples the "
            "encoder trained on are taken as encoders that never saw them score them (it pulls "
            f"its own examples together); from their own scores it would be {uncorrected:.2f}."
        )
    hint = _uncertain_hint(scored, negatives, target_recall)
    if hint is not None:
        notes.append(
            f"Uncertain questions (margin up to {hint[0]:.3f}, like the Label queue's first "
            f"cards) are called out of scope below {hint[1]:.2f}, calibrated on the "
            f"{UNCERTAIN_SHARE:.0%} least certain training examples."
        )
    return Calibration(
        thresholds,
        target_recall,
        fallback,
        len(every),
        n_oos,
        notes,
        uncertain=hint,
        corrected_by=correction.source if uncorrected is not None and correction else None,
        n_corrected=n_corrected,
        uncorrected=uncorrected,
    )


def _corrected(
    rows: list[tuple[int, str, str | None, float, float]], correction: Correction | None
) -> tuple[list[tuple[str, str | None, float, float]], int]:
    """The scored rows without their ids, the scores of ``correction``'s examples mapped (those
    with a top intent), and how many were."""
    hit = [
        i
        for i, row in enumerate(rows)
        if correction and row[2] is not None and row[0] in correction.ids
    ]
    if not hit or correction is None:
        return [row[1:] for row in rows], 0
    mapped = dict(zip(hit, correction.map([rows[i][3] for i in hit]).tolist(), strict=True))
    return [
        (name, top, mapped.get(i, score), margin)
        for i, (_, name, top, score, margin) in enumerate(rows)
    ], len(hit)


def _by_top(
    scored: list[tuple[str, str | None, float, float]], count: Counter[str]
) -> dict[str, list[float]]:
    """Each top intent's in-scope scores, of the examples whose own intent has 2 or more."""
    own: dict[str, list[float]] = {name: [] for name in count}
    for name, top, score, _ in scored:
        if top is not None and count[name] >= 2:
            own.setdefault(top, []).append(score)
    return own


def _uncertain_hint(
    scored: list[tuple[str, str | None, float, float]],
    negatives: dict[str, list[float]],
    target_recall: float,
) -> tuple[float, float] | None:
    """The margin that makes a question uncertain (the :data:`UNCERTAIN_SHARE` smallest margins
    of the out-of-fold examples) and the threshold that keeps ``target_recall`` of those
    uncertain (in-scope) examples (None: fewer than :data:`MIN_UNCERTAIN`)."""
    margins = np.array([m for _, top, _, m in scored if top is not None])
    if len(margins) < MIN_UNCERTAIN / UNCERTAIN_SHARE:
        return None
    cut = float(np.quantile(margins, UNCERTAIN_SHARE))
    # in scope is all the hint asks: every uncertain example counts, its top intent right or not
    own = [s for _, top, s, m in scored if top is not None and m <= cut]
    if len(own) < MIN_UNCERTAIN:
        return None
    every_negative = [v for values in negatives.values() for v in values]
    return cut, choose_threshold(own, every_negative, target_recall)


def calibrate(
    vectors: np.ndarray,
    labels: Sequence[Sequence[str]],
    *,
    out_of_scope: np.ndarray | None = None,
    anchors: tuple[Sequence[str], np.ndarray, float] | None = None,
    **options: Any,
) -> Calibration:
    """:func:`calibrate_predictor` of the Predictor the one factory
    (:class:`~core.retrieval.factory.PredictorFactory`) builds from ``vectors`` and ``labels``
    (each example's label set; :data:`OUT_OF_SCOPE` rows are left out), with ``anchors`` (intent
    names, their vectors, weight) when the serving pool has them."""
    vecs = np.asarray(vectors, dtype=np.float32)
    names = (
        None
        if anchors is None
        else Anchors(dict(zip(anchors[0], anchors[0], strict=True)), anchors[2], anchors[1])
    )
    factory = PredictorFactory.for_vectors(
        vecs.shape[1] if vecs.ndim == 2 else 1,
        anchors=names,
        k=options.pop("k", 1),
        rule=options.pop("rule", DEFAULT_RULE),
    )
    ids = list(range(len(labels)))
    predictor = factory.build([""] * len(labels), labels, vectors=vecs, ids=ids)
    return calibrate_predictor(predictor, out_of_scope=out_of_scope, **options)
