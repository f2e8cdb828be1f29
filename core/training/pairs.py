"""Training batches from labelled utterances: pure functions of (labels, seed).

Labels are tuples of intent names (multi-label from the start; an empty tuple means "no intent").
Two utterances are a positive pair when their label sets intersect (Multi-ConvFiT); every other
pair in a class-disjoint batch shares no label, so it is a true negative. Single-label data is the
special case of 1-tuples.

Example:
    >>> labels = [("greet",), ("greet",), ("bye",), ("bye",)]
    >>> positive_pairs(labels)
    [(0, 1), (2, 3)]
    >>> [sorted(b) for b in anchor_positive_batches(labels, seed=0, batch_size=2)]
    [[(0, 1), (2, 3)], [(1, 0), (3, 2)]]
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence

from core.training.trainable import check_trainable  # re-exported: its old home

Labels = Sequence[Sequence[str]]


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


__all__ = ["anchor_positive_batches", "check_trainable", "positive_pairs"]
