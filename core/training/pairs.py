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


def focus_batches(
    labels: Labels,
    focus: Sequence[int],
    seed: int,
    *,
    batch_size: int,
    passes: int = 1,
) -> list[list[tuple[int, int]]]:
    """Class-disjoint batches for a run that continues a tuned encoder with what changed: every
    ``focus`` utterance (a new or changed label) is an anchor once per pass, at most half of
    each batch; the rest of the batch replays one anchor of each of as many other intents as
    fit, drawn at random, so the new labels are contrasted with the whole label set and the
    space around them does not drift (bench/RESULTS.md, "A first version that continues from
    the active one").

    Example:
        >>> labels = [("a",), ("a",), ("b",), ("b",), ("c",), ("c",)]
        >>> [sorted(b) for b in focus_batches(labels, [0], seed=0, batch_size=4)]
        [[(0, 1), (3, 2), (5, 4)]]
    """
    if batch_size < 2:
        raise ValueError(f"batch_size must be >= 2, got {batch_size}.")
    sets = [frozenset(lab) for lab in labels]
    rng = random.Random(seed)
    partners: dict[int, list[int]] = defaultdict(list)
    for i, j in positive_pairs(labels):
        partners[i].append(j)
        partners[j].append(i)
    by_intent: dict[str, list[int]] = defaultdict(list)
    for a in sorted(partners):
        for name in sets[a]:
            by_intent[name].append(a)
    anchors = [a for a in dict.fromkeys(focus) if a in partners]
    chosen = set(anchors)  # replay draws other utterances where an intent has them
    half = max(1, batch_size // 2)
    batches: list[list[tuple[int, int]]] = []
    for _ in range(passes):
        order = anchors[:]
        rng.shuffle(order)
        open_batches: list[tuple[list[tuple[int, int]], set[str]]] = []
        for a in order:
            p = rng.choice(partners[a])
            used = sets[a] | sets[p]
            for batch, seen in open_batches:
                if len(batch) < half and not (seen & used):
                    batch.append((a, p))
                    seen |= used
                    break
            else:
                open_batches.append(([(a, p)], set(used)))
        for batch, seen in open_batches:
            others = sorted(by_intent)
            rng.shuffle(others)
            for name in others:
                if len(batch) >= batch_size:
                    break
                if name in seen:
                    continue
                a = rng.choice([i for i in by_intent[name] if i not in chosen] or by_intent[name])
                p = rng.choice(partners[a])
                used = sets[a] | sets[p]
                if seen & used:
                    continue
                batch.append((a, p))
                seen |= used
            if len(batch) >= 2:
                batches.append(batch)
    rng.shuffle(batches)
    return batches


__all__ = ["anchor_positive_batches", "check_trainable", "focus_batches", "positive_pairs"]
