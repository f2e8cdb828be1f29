"""How far annotators agree on the items they both labelled: Cohen's κ per annotator pair
(scikit-learn's ``cohen_kappa_score``), Krippendorff's α over everyone (the ``krippendorff``
package: any number of annotators, missing answers allowed), and per intent.

An answer is the set of intents given (``{"out_of_scope"}`` for out of scope; skips are no
answer). Single-label answers are sets of one. Two answers agree when the sets are equal, which
is what κ and the nominal α count; for multi-label sets, α with the MASI distance (Passonneau
2006: a subset is nearer than a mere overlap, which is nearer than a disjoint set) gives partial
credit. Per intent, each answer is read as "has this intent or not" over the items where anyone
gave it: κ when two annotators answered them, α when more.

A value is None where the statistic is undefined (fewer than two items, or one value only: no
chance agreement to correct for).

Example:
    >>> a = {1: {"ana": {"card"}, "ben": {"card"}}, 2: {"ana": {"fee"}, "ben": {"fee"}},
    ...      3: {"ana": {"card"}, "ben": {"fee"}}, 4: {"ana": {"fee"}, "ben": {"fee"}}}
    >>> found = agreement(a)
    >>> found.disputed, found.pairs[0].agreed, round(found.pairs[0].kappa or 0, 3)
    ((3,), 3, 0.5)
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import krippendorff
import numpy as np
from sklearn.metrics import cohen_kappa_score

Answers = Mapping[Any, Mapping[str, Collection[str]]]  # item (hashable) -> annotator -> intents


@dataclass(frozen=True)
class PairAgreement:
    """Two annotators on the items both answered: how many, how many the same, and κ."""

    a: str
    b: str
    items: int
    agreed: int
    kappa: float | None


@dataclass(frozen=True)
class IntentAgreement:
    """One intent over the items where anyone gave it: κ (two annotators) or α (more), and the
    items where someone gave it and someone did not."""

    intent: str
    items: int
    statistic: str  # "kappa" or "alpha"
    value: float | None
    disputed: tuple[Any, ...]


@dataclass(frozen=True)
class Agreement:
    annotators: tuple[str, ...]
    items: int  # items with two answers or more
    disputed: tuple[Any, ...]  # those whose answers differ
    pairs: tuple[PairAgreement, ...]
    alpha: float | None  # Krippendorff's α, nominal: equal sets agree
    alpha_masi: float | None  # α with the MASI distance between sets (multi-label)
    intents: tuple[IntentAgreement, ...]  # lowest agreement first (undefined last)


def _defined(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def kappa(first: list[str], second: list[str]) -> float | None:
    """Cohen's κ of two annotators' answers on the same items (None when undefined)."""
    if len(first) < 2 or len(set(first) | set(second)) < 2:  # one value only: 0/0
        return None
    return _defined(cohen_kappa_score(first, second))


def masi(a: frozenset[str], b: frozenset[str]) -> float:
    """MASI distance between two sets of intents: 1 - Jaccard x monotonicity.

    Example:
        >>> masi(frozenset("a"), frozenset("a")), masi(frozenset("ab"), frozenset("a"))
        (0.0, 0.6666666666666667)
    """
    if a == b:
        return 0.0
    union = len(a | b)
    jaccard = len(a & b) / union if union else 0.0
    monotonicity = 2 / 3 if (a <= b or b <= a) else (1 / 3 if a & b else 0.0)
    return 1.0 - jaccard * monotonicity


def alpha(rows: list[list[frozenset[str] | None]], distance: str = "nominal") -> float | None:
    """Krippendorff's α of annotators (rows) x items (columns), None for no answer;
    ``distance``: ``nominal`` (equal sets) or ``masi``."""
    domain = sorted({v for row in rows for v in row if v is not None}, key=sorted)
    if len(domain) < 2 or not rows or len(rows[0]) < 2:
        return None
    index = {v: i for i, v in enumerate(domain)}
    data = np.array([[np.nan if v is None else index[v] for v in row] for row in rows], dtype=float)
    metric: Any = "nominal"
    if distance == "masi":
        table = np.array([[masi(x, y) for y in domain] for x in domain])

        def metric(v1: Any, v2: Any, i1: Any, i2: Any, n_v: Any, dtype: Any = float) -> Any:
            return table[i1, i2].astype(dtype)

    try:
        value = krippendorff.alpha(
            reliability_data=data,
            value_domain=list(range(len(domain))),
            level_of_measurement=metric,
        )
    except ValueError:  # no item with two answers
        return None
    return _defined(float(value))


def _by_intent(
    answers: dict[Any, dict[str, frozenset[str]]], annotators: list[str]
) -> list[IntentAgreement]:
    intents = sorted({i for given in answers.values() for v in given.values() for i in v})
    out = []
    for intent in intents:
        items = [
            item for item, given in answers.items() if any(intent in v for v in given.values())
        ]
        disputed = tuple(
            item for item in items if len({intent in v for v in answers[item].values()}) > 1
        )
        who = [a for a in annotators if any(a in answers[item] for item in items)]
        has = frozenset(["yes"]), frozenset(["no"])
        rows = [
            [
                None if a not in answers[item] else has[0 if intent in answers[item][a] else 1]
                for item in items
            ]
            for a in who
        ]
        if len(who) == 2:
            both = [i for i in range(len(items)) if rows[0][i] and rows[1][i]]
            first = [sorted(rows[0][i] or ())[0] for i in both]
            second = [sorted(rows[1][i] or ())[0] for i in both]
            value, statistic = kappa(first, second), "kappa"
        else:
            value, statistic = alpha(rows), "alpha"
        out.append(IntentAgreement(intent, len(items), statistic, value, disputed))
    return sorted(out, key=lambda r: (r.value is None, r.value or 0.0, -len(r.disputed)))


def agreement(answers: Answers) -> Agreement:
    """The agreement on the items two annotators or more answered (others are left out)."""
    shared = {
        item: {who: frozenset(v) for who, v in given.items()}
        for item, given in answers.items()
        if len(given) > 1
    }
    annotators = sorted({who for given in shared.values() for who in given})
    disputed = tuple(item for item, given in shared.items() if len(set(given.values())) > 1)
    pairs = []
    for a, b in combinations(annotators, 2):
        both = [given for given in shared.values() if a in given and b in given]
        if not both:
            continue
        first = ["|".join(sorted(g[a])) for g in both]
        second = ["|".join(sorted(g[b])) for g in both]
        agreed = sum(x == y for x, y in zip(first, second, strict=True))
        pairs.append(PairAgreement(a, b, len(both), agreed, kappa(first, second)))
    rows = [[shared[item].get(who) for item in shared] for who in annotators]
    return Agreement(
        annotators=tuple(annotators),
        items=len(shared),
        disputed=disputed,
        pairs=tuple(pairs),
        alpha=alpha(rows),
        alpha_masi=alpha(rows, "masi"),
        intents=tuple(_by_intent(shared, annotators)),
    )
