"""The gate's sample: a fixed number of test questions, stratified by intent, on which a new
version and the one serving are compared question by question (issue 71 item 3).

Two versions answered on the same questions differ only where one is right and the other wrong
(the discordant questions): their difference in accuracy is ``(b - c) / n`` and its standard
error ``sqrt(b + c - (b - c)^2 / n) / n`` (the paired, McNemar-style estimate), so a sample of a
thousand questions says within about a point what the whole split would, at a cost that does
not grow with the split.

Example:
    >>> gold = [("a",)] * 6 + [("b",)] * 4
    >>> picked = stratified_sample(gold, 5, seed=0)
    >>> len(picked), sum(i < 6 for i in picked)  # 3 of a's 6 questions, 2 of b's 4
    (5, 3)
    >>> v = paired([True] * 8 + [False] * 2, [True] * 7 + [False] * 3)
    >>> v.n, v.better, v.worse, round(v.diff, 3)
    (10, 1, 0, 0.1)
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

# The interval a verdict states: 95 %, two-sided.
Z95 = 1.96


def stratified_sample(gold: Sequence[Sequence[str]], size: int, seed: int) -> list[int]:
    """``size`` question indices (all of them when there are no more), each intent represented
    in proportion to its questions (its share rounded, at least one while the sample has room),
    the same for the same questions and seed; sorted.

    The intent of a question is its first gold label (multi-label questions are grouped by it).
    """
    n = len(gold)
    if size >= n:
        return list(range(n))
    by: dict[str, list[int]] = defaultdict(list)
    for i, labels in enumerate(gold):
        by[labels[0] if labels else ""].append(i)
    rng = random.Random(seed)
    groups = sorted(by)
    for name in groups:
        rng.shuffle(by[name])
    # largest remainder: each intent's share of the sample, rounded so the shares sum to size
    quota = {name: size * len(by[name]) / n for name in groups}
    take = {name: int(q) for name, q in quota.items()}
    left = size - sum(take.values())
    for name in sorted(groups, key=lambda g: (take[g] - quota[g], g))[:left]:
        take[name] += 1
    return sorted(i for name in groups for i in by[name][: take[name]])


@dataclass(frozen=True)
class Paired:
    """Two versions on the same ``n`` questions: ``better`` questions only the new one answers
    right, ``worse`` only the reference; ``diff`` the new one's accuracy less the reference's,
    with its 95 % interval (``low``, ``high``)."""

    n: int
    better: int
    worse: int

    @property
    def diff(self) -> float:
        return (self.better - self.worse) / self.n if self.n else 0.0

    @property
    def half_width(self) -> float:
        if not self.n:
            return 0.0
        d = self.better - self.worse
        var = max(0.0, self.better + self.worse - d * d / self.n)
        return Z95 * math.sqrt(var) / self.n

    @property
    def low(self) -> float:
        return self.diff - self.half_width

    @property
    def high(self) -> float:
        return self.diff + self.half_width

    def words(self) -> str:
        """The difference in points with its interval, for people.

        >>> Paired(1000, 30, 22).words()
        '+0.8 points (95 % interval -0.6 to +2.2) on 1,000 paired questions'
        """
        return (
            f"{100 * self.diff:+.1f} points (95 % interval {100 * self.low:+.1f} to "
            f"{100 * self.high:+.1f}) on {self.n:,} paired questions"
        )


def paired(new_hits: Sequence[bool], ref_hits: Sequence[bool]) -> Paired:
    """The paired comparison of two versions' answers (right or wrong) on the same questions."""
    if len(new_hits) != len(ref_hits):
        raise ValueError(f"paired answers differ in length ({len(new_hits)} vs {len(ref_hits)}).")
    better = sum(1 for a, b in zip(new_hits, ref_hits, strict=True) if a and not b)
    worse = sum(1 for a, b in zip(new_hits, ref_hits, strict=True) if b and not a)
    return Paired(len(new_hits), better, worse)


__all__ = ["Z95", "Paired", "paired", "stratified_sample"]
