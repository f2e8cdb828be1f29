"""Training pairs from labelled utterances: pure functions of (texts, labels, seed).

Labels are tuples of intent names (multi-label from the start; an empty tuple means "no intent").
Two utterances are a positive pair when their label sets intersect (Multi-ConvFiT); a negative
shares no label. Single-label data is the special case of 1-tuples.

Example:
    >>> texts = ["hi", "hello", "bye", "see you"]
    >>> labels = [("greet",), ("greet",), ("bye",), ("bye",)]
    >>> pairs = sample_pairs(texts, labels, seed=0, negatives=1)
    >>> sum(p.label for p in pairs)  # two positives, each with 2 negatives
    2
"""

from __future__ import annotations

import logging
import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from core.training.trainable import check_trainable  # re-exported: its old home

logger = logging.getLogger(__name__)

Labels = Sequence[Sequence[str]]


@dataclass(frozen=True)
class Pair:
    """Two utterances (by index into ``texts``) and whether they share an intent (1) or not (0)."""

    i: int
    j: int
    a: str
    b: str
    label: int


def _check(texts: Sequence[str], labels: Labels) -> list[frozenset[str]]:
    if len(texts) != len(labels):
        raise ValueError(f"texts and labels differ in length ({len(texts)} vs {len(labels)}).")
    sets: list[frozenset[str]] = []
    for lab in labels:
        if isinstance(lab, str):
            raise ValueError("labels must be tuples of intent names, e.g. ('greet',), not strings.")
        sets.append(frozenset(lab))
    return sets


def positive_pairs(labels: Labels) -> list[tuple[int, int]]:
    """Every unordered pair ``(i, j)``, ``i < j``, whose label sets intersect."""
    sets = [frozenset(lab) for lab in labels]
    by_intent: dict[str, list[int]] = defaultdict(list)
    for idx, s in enumerate(sets):
        for name in s:
            by_intent[name].append(idx)
    found: set[tuple[int, int]] = set()
    for members in by_intent.values():
        for x in range(len(members)):
            for y in range(x + 1, len(members)):
                found.add((members[x], members[y]))
    return sorted(found)


class _NegativeSampler:
    """Draws a random index whose label set shares nothing with a given set (rejection + fallback)."""

    def __init__(self, sets: list[frozenset[str]], rng: random.Random) -> None:
        self.sets = sets
        self.rng = rng
        self._cache: dict[frozenset[str], list[int]] = {}

    def draw(self, avoid: frozenset[str]) -> int | None:
        n = len(self.sets)
        for _ in range(16):
            k = self.rng.randrange(n)
            if not (self.sets[k] & avoid):
                return k
        if avoid not in self._cache:
            self._cache[avoid] = [k for k, s in enumerate(self.sets) if not (s & avoid)]
        pool = self._cache[avoid]
        return self.rng.choice(pool) if pool else None


def sample_pairs(
    texts: Sequence[str],
    labels: Labels,
    seed: int,
    *,
    negatives: int = 3,
    max_pairs: int | None = None,
) -> list[Pair]:
    """ConvFiT Stage 2 pairs.

    For every positive pair ``(xi, xj)`` (label sets intersect), ``negatives`` pairs
    ``(xi, other)`` and ``negatives`` pairs ``(other, xj)`` where ``other`` shares no label with
    ``xi`` (resp. ``xj``). Above ``max_pairs``, positives are sub-sampled so the total fits.

    Args:
        texts: utterances.
        labels: one tuple of intent names per utterance (``()`` = no intent).
        seed: seeds sub-sampling, negative draws and the final shuffle.
        negatives: ``n`` negatives per side for every positive.
        max_pairs: optional cap on the number of pairs returned.

    Returns:
        Shuffled pairs; ``label`` is 1 for positives, 0 for negatives.

    Raises:
        ValueError: for mismatched lengths or a bad ``negatives``/cap.
    """
    if negatives < 0:
        raise ValueError(f"negatives must be >= 0, got {negatives}.")
    if max_pairs is not None and max_pairs < 1:
        raise ValueError(f"max_pairs must be >= 1, got {max_pairs}.")
    sets = _check(texts, labels)
    rng = random.Random(seed)
    pos = positive_pairs(labels)
    per_positive = 1 + 2 * negatives
    if max_pairs is not None and len(pos) * per_positive > max_pairs:
        keep = max(1, max_pairs // per_positive)
        pos = sorted(rng.sample(pos, keep))
        logger.info("sub-sampled %d positive pairs to fit max_pairs=%d", keep, max_pairs)
    sampler = _NegativeSampler(sets, rng)
    out: list[Pair] = []
    for i, j in pos:
        out.append(Pair(i, j, texts[i], texts[j], 1))
        for _ in range(negatives):
            k = sampler.draw(sets[i])
            if k is not None:
                out.append(Pair(i, k, texts[i], texts[k], 0))
            k = sampler.draw(sets[j])
            if k is not None:
                out.append(Pair(k, j, texts[k], texts[j], 0))
    rng.shuffle(out)
    if max_pairs is not None and len(out) > max_pairs:
        out = out[:max_pairs]
    return out


def anchor_positive_batches(
    labels: Labels,
    seed: int,
    *,
    batch_size: int,
    passes: int = 1,
) -> list[list[tuple[int, int]]]:
    """Class-disjoint batches of (anchor, positive) index pairs for in-batch ranking losses.

    Every labelled utterance is an anchor once per pass, paired with a random other utterance that
    shares a label. Within a batch no two pairs share any intent, so every other in-batch item is
    a true negative.

    Args:
        labels: one tuple of intent names per utterance.
        seed: seeds the positive draws and the batch order.
        batch_size: maximum pairs per batch.
        passes: how many times every anchor is used.

    Returns:
        Batches (lists of ``(anchor, positive)``) with at least two pairs each.
    """
    if batch_size < 2:
        raise ValueError(f"batch_size must be >= 2, got {batch_size}.")
    sets = [frozenset(lab) for lab in labels]
    rng = random.Random(seed)
    partners: dict[int, list[int]] = defaultdict(list)
    for i, j in positive_pairs(labels):
        partners[i].append(j)
        partners[j].append(i)
    anchors = sorted(partners)
    batches: list[list[tuple[int, int]]] = []
    for _ in range(passes):
        order = anchors[:]
        rng.shuffle(order)
        open_batches: list[tuple[list[tuple[int, int]], set[str]]] = []
        for a in order:
            p = rng.choice(partners[a])
            used = sets[a] | sets[p]
            for batch, seen in open_batches:
                if not (seen & used):
                    batch.append((a, p))
                    seen |= used
                    break
            else:
                open_batches.append(([(a, p)], set(used)))
            full = [b for b in open_batches if len(b[0]) >= batch_size]
            for b in full:
                batches.append(b[0])
                open_batches.remove(b)
        batches.extend(b for b, _ in open_batches if len(b) >= 2)
    rng.shuffle(batches)
    return batches


def estimate_shots(labels: Labels) -> float:
    """Median number of examples per intent (drives the paper's epochs-by-data-size rule)."""
    counts: dict[str, int] = defaultdict(int)
    for lab in labels:
        for name in lab:
            counts[name] += 1
    if not counts:
        return 0.0
    values = sorted(counts.values())
    mid = len(values) // 2
    return float(values[mid]) if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


__all__ = [
    "Pair",
    "anchor_positive_batches",
    "check_trainable",
    "estimate_shots",
    "positive_pairs",
    "sample_pairs",
]
