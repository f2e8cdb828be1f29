"""Multi-label evaluation: micro/macro F1, exact match, per-intent scores, pair co-occurrence.

Every function takes gold and predicted label sets (sequences of intent names; an empty set means
"no intent") and returns plain JSON-serialisable dicts. :func:`multilabel_scores` is the flat
``dict[str, float]`` evaluator (primary metric ``micro_f1``, the Multi-ConvFiT F1);
:func:`multilabel_report` adds per-intent scores and the co-occurrence table.

Conventions: micro F1 pools true/false positives over all intents (when there is nothing to find
and nothing was predicted it is 1.0); macro F1 averages the F1 of every intent that occurs in gold
or in the predictions; exact match counts utterances whose predicted set equals the gold set.

Example:
    >>> s = multilabel_scores([("a", "b"), ("a",), ()], [("a",), ("a",), ()])
    >>> round(s["micro_f1"], 3), round(s["exact_match"], 3)
    (0.8, 0.667)
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from itertools import combinations
from typing import Any

logger = logging.getLogger(__name__)

PRIMARY = "micro_f1"

LabelSets = Sequence[Sequence[str]]


def _prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0
    return precision, recall, f1


def _check(gold: LabelSets, pred: LabelSets) -> tuple[list[frozenset[str]], list[frozenset[str]]]:
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold label sets but {len(pred)} predicted")
    return [frozenset(g) for g in gold], [frozenset(p) for p in pred]


def per_intent_scores(
    gold: LabelSets, pred: LabelSets, intents: Sequence[str] | None = None
) -> dict[str, dict[str, float]]:
    """Precision, recall, F1, support (gold count) and predicted count for each intent.

    Args:
        gold: gold label sets.
        pred: predicted label sets, aligned with ``gold``.
        intents: intents to report (default: every intent in gold or predictions).

    Example:
        >>> per_intent_scores([("a",)], [("a", "b")])["b"]
        {'precision': 0.0, 'recall': 0.0, 'f1': 0.0, 'support': 0, 'predicted': 1}
    """
    g_sets, p_sets = _check(gold, pred)
    names = (
        list(intents)
        if intents is not None
        else sorted(set().union(*g_sets, *p_sets))
        if g_sets
        else []
    )
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    for g, p in zip(g_sets, p_sets, strict=True):
        tp.update(g & p)
        fp.update(p - g)
        fn.update(g - p)
    out: dict[str, dict[str, float]] = {}
    for name in names:
        precision, recall, f1 = _prf(tp[name], fp[name], fn[name])
        out[name] = {
            "precision": precision,
            "recall": recall,
            "f1": f1,
            "support": tp[name] + fn[name],
            "predicted": tp[name] + fp[name],
        }
    return out


def multilabel_scores(gold: LabelSets, pred: LabelSets) -> dict[str, float]:
    """Micro precision/recall/F1, macro F1, exact-match accuracy and ``n`` (all floats).

    Example:
        >>> multilabel_scores([("a",)], [("a",)])["macro_f1"]
        1.0
    """
    g_sets, p_sets = _check(gold, pred)
    tp = sum(len(g & p) for g, p in zip(g_sets, p_sets, strict=True))
    fp = sum(len(p - g) for g, p in zip(g_sets, p_sets, strict=True))
    fn = sum(len(g - p) for g, p in zip(g_sets, p_sets, strict=True))
    precision, recall, f1 = _prf(tp, fp, fn)
    if tp + fp + fn == 0:
        precision = recall = f1 = 1.0
    per = per_intent_scores(gold, pred)
    macro = sum(s["f1"] for s in per.values()) / len(per) if per else f1
    exact = (
        sum(g == p for g, p in zip(g_sets, p_sets, strict=True)) / len(g_sets) if g_sets else 0.0
    )
    return {
        "micro_f1": f1,
        "micro_precision": precision,
        "micro_recall": recall,
        "macro_f1": macro,
        "exact_match": exact,
        "n": float(len(g_sets)),
    }


def cooccurrence_table(
    gold: LabelSets, pred: LabelSets, *, min_count: int = 1
) -> list[dict[str, Any]]:
    """How often each intent pair co-occurs in gold vs is predicted together.

    One row per unordered pair ``(a, b)`` (``a < b``) seen together at least ``min_count`` times in
    gold or in predictions: ``gold`` (utterances whose gold set holds both), ``predicted`` (whose
    predicted set holds both), ``both`` (gold and predicted hold both) and ``recall`` =
    ``both / gold`` (0.0 when ``gold`` is 0). Sorted by gold count, then predicted, then names.

    Example:
        >>> cooccurrence_table([("a", "b")], [("a", "b", "c")])[0]
        {'a': 'a', 'b': 'b', 'gold': 1, 'predicted': 1, 'both': 1, 'recall': 1.0}
    """
    g_sets, p_sets = _check(gold, pred)
    g_pairs: Counter[tuple[str, str]] = Counter()
    p_pairs: Counter[tuple[str, str]] = Counter()
    both: Counter[tuple[str, str]] = Counter()
    for g, p in zip(g_sets, p_sets, strict=True):
        gp = set(combinations(sorted(g), 2))
        pp = set(combinations(sorted(p), 2))
        g_pairs.update(gp)
        p_pairs.update(pp)
        both.update(gp & pp)
    rows: list[dict[str, Any]] = [
        {
            "a": a,
            "b": b,
            "gold": g_pairs[(a, b)],
            "predicted": p_pairs[(a, b)],
            "both": both[(a, b)],
            "recall": both[(a, b)] / g_pairs[(a, b)] if g_pairs[(a, b)] else 0.0,
        }
        for (a, b) in set(g_pairs) | set(p_pairs)
        if max(g_pairs[(a, b)], p_pairs[(a, b)]) >= min_count
    ]
    rows.sort(key=lambda r: (-r["gold"], -r["predicted"], r["a"], r["b"]))
    return rows


def multilabel_report(
    gold: LabelSets,
    pred: LabelSets,
    intents: Sequence[str] | None = None,
    *,
    min_pair_count: int = 1,
) -> dict[str, Any]:
    """Everything for the evaluation tab, as one JSON-serialisable dict.

    Keys: ``primary`` (= ``"micro_f1"``), the scores of :func:`multilabel_scores`, ``per_intent``
    (:func:`per_intent_scores`) and ``cooccurrence`` (:func:`cooccurrence_table`).

    Example:
        >>> r = multilabel_report([("a", "b")], [("a",)])
        >>> r["primary"], r["micro_f1"], r["cooccurrence"][0]["predicted"]
        ('micro_f1', 0.6666666666666666, 0)
    """
    report: dict[str, Any] = {"primary": PRIMARY}
    report.update(multilabel_scores(gold, pred))
    report["per_intent"] = per_intent_scores(gold, pred, intents)
    report["cooccurrence"] = cooccurrence_table(gold, pred, min_count=min_pair_count)
    return report
