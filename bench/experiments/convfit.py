"""ConvFiT Stage 2 as the paper trains it (an experiment that left the product, issue 46; measured
again by issue 55): sampled (utterance, utterance) pairs, the online contrastive loss (OCL).

The recipe (RESEARCH.md, ``papers/convfit.txt`` §3): for every positive pair (two utterances of
one intent) ``n = 3`` negatives (the first utterance with a random utterance of another intent)
and ``n`` the other way; OCL (Hadsell: cosine distance, margin 0.5, only the batch's hard
positives and hard negatives count); batches of 32 pairs, AdamW at 2e-5, weight decay 0.01, 10 %
linear warm-up then linear decay, 10 epochs at 10 shots per intent; every transformer layer
trains (the token embeddings stay frozen, as in the runs that retired it). Not the paper's: no
Stage 1 (MiniLM was trained on a billion sentence pairs already), no 512-d tanh projection
(``projection_dim`` lost 0.7 points, bench/RESULTS.md), mean pooling of MiniLM, not RoBERTa.

The product's loop trains it (:func:`core.training.loop.run_training`: the same optimiser,
schedule, bf16 and length-sorted chunks as the default), so a step costs what it would in the
product. ``steps`` fits the schedule to a budget (warm-up and decay over ``steps``); ``None``
is ``epochs`` passes over the pairs (the paper's 10 by default). ``checkpoint`` is called with the model in eval mode after each of
``checkpoints`` steps (the schedule still runs to its end), which is how ``bench/train.py`` draws
the learning curve.

``hard=True`` draws each side's negatives among its 10 nearest utterances of other intents in the
frozen space instead of at random (``bench/ocl_idle.py`` in git history: 0.7-2.2 % of batches
with loss 0 instead of 21-75 %), one of issue 44's untried levers.

Example:
    >>> pairs = sample_pairs([("a",), ("a",), ("b",), ("b",)], seed=0, negatives=1)
    >>> sorted(p for p in pairs if p[2] == 1)
    [(0, 1, 1), (2, 3, 1)]
    >>> len(pairs)  # each positive with one negative per side
    6
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from core.training.pairs import positive_pairs

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

# The paper's Stage 2 settings at 10 shots per intent (papers/convfit.txt, §3 "Training Setup").
NEGATIVES, EPOCHS, BATCH, LR, WARMUP, MARGIN = 3, 10, 32, 2e-5, 0.1, 0.5
# Hard negatives: drawn among this many nearest utterances of other intents (frozen space).
NEAR = 10

Pair = tuple[int, int, int]  # (i, j, 1 if same intent else 0)


def sample_pairs(
    labels: Sequence[Sequence[str]],
    seed: int,
    *,
    negatives: int = 3,
    closest: Sequence[Sequence[int]] | None = None,
) -> list[Pair]:
    """ConvFiT's pairs: every positive ``(i, j)`` and, for each, ``negatives`` pairs ``(i, k)``
    and ``negatives`` pairs ``(k, j)`` with ``k`` of another intent: random, or drawn from
    ``closest[i]`` (``closest[j]``) when given (hard negatives). Shuffled."""
    sets = [frozenset(lab) for lab in labels]
    rng = random.Random(seed)
    others: dict[frozenset[str], list[int]] = {}

    def draw(side: int) -> int | None:
        if closest is not None:
            return rng.choice(closest[side]) if closest[side] else None
        avoid = sets[side]
        if avoid not in others:
            others[avoid] = [k for k, s in enumerate(sets) if not (s & avoid)]
        pool = others[avoid]
        return rng.choice(pool) if pool else None

    out: list[Pair] = []
    for i, j in positive_pairs(labels):
        out.append((i, j, 1))
        for _ in range(negatives):
            k = draw(i)
            if k is not None:
                out.append((i, k, 0))
            k = draw(j)
            if k is not None:
                out.append((k, j, 0))
    rng.shuffle(out)
    return out


def nearest_others(
    labels: Sequence[Sequence[str]], vectors: np.ndarray, near: int
) -> list[list[int]]:
    """Each utterance's ``near`` nearest utterances (cosine, unit vectors) sharing no intent."""
    sets = [frozenset(lab) for lab in labels]
    sims = vectors @ vectors.T
    return [
        [int(k) for k in np.argsort(-sims[i], kind="stable") if not (sets[k] & sets[i])][:near]
        for i in range(len(labels))
    ]


def epoch_steps(labels: Sequence[Sequence[str]], batch_size: int = 32, negatives: int = 3) -> int:
    """Steps of one pass over the recipe's pairs (10 of them are the paper's budget)."""
    pairs = sample_pairs(labels, 0, negatives=negatives)
    return -(-len(pairs) // batch_size)


def train_convfit(
    base: str,
    texts: Sequence[str],
    labels: Sequence[Sequence[str]],
    *,
    seed: int,
    steps: int | None = None,
    epochs: float = EPOCHS,
    hard: bool = False,
    lr: float | None = None,
    checkpoints: Sequence[int] = (),
    checkpoint: Callable[[int, SentenceTransformer], None] | None = None,
    device: str | None = None,
) -> tuple[SentenceTransformer, dict[str, Any]]:
    """Train ``base`` with the paper's Stage 2 recipe; returns the model (eval mode) and stats.

    Args:
        base: registry name of the encoder (``"minilm"``).
        texts, labels: the labelled utterances (one tuple of intents each).
        seed: seeds the pairs, their order each epoch and the initialisation.
        steps: the budget the schedule is fitted to; None = ``epochs`` passes over the pairs.
        epochs: passes over the pairs when ``steps`` is None (the paper's 10 at 10 shots).
        hard: hard negatives (nearest other-intent utterances in the frozen space).
        lr: peak learning rate (default the paper's 2e-5).
        checkpoints: steps after which ``checkpoint(step, model)`` runs, the model in eval mode.
    """
    import torch
    from sentence_transformers.sentence_transformer import losses

    from core.encoding.registry import default_device, load_encoder
    from core.training import fit
    from core.training.loop import Batch, TrainProgress, run_training, seed_everything
    from core.training.tokens import TokenBank

    device = device or default_device()
    seed_everything(seed)
    closest = None
    if hard:
        frozen = load_encoder(base, device=device).encode(list(texts), batch_size=128)
        closest = nearest_others(labels, np.asarray(frozen), NEAR)
    pairs = sample_pairs(labels, seed, negatives=NEGATIVES, closest=closest)
    size = BATCH
    per_epoch = -(-len(pairs) // size)
    total = steps if steps is not None else max(1, round(epochs * per_epoch))
    model = fit._base_copy(base, device)
    model.max_seq_length = 48
    fit._freeze(model, embeddings=True, layers=0)
    epoch = [0]

    def next_epoch() -> list[Batch]:
        order = list(pairs)
        random.Random(seed * 1000 + epoch[0]).shuffle(order)
        epoch[0] += 1
        out = []
        for s in range(0, len(order), size):
            chunk = order[s : s + size]
            target = torch.tensor([float(y) for _, _, y in chunk], device=device)
            out.append(
                Batch([[texts[i] for i, _, _ in chunk], [texts[j] for _, j, _ in chunk]], target)
            )
        return out

    loss = losses.OnlineContrastiveLoss(
        model,
        distance_metric=losses.SiameseDistanceMetric.COSINE_DISTANCE,
        margin=MARGIN,
    ).to(device)
    marks = set(checkpoints)
    zero = [0, 0]  # steps with loss 0, steps seen

    def progress(p: TrainProgress) -> None:
        zero[0] += p.loss == 0.0
        zero[1] += 1
        if p.step in marks and p.step < total and checkpoint is not None:
            model.eval()
            try:
                with torch.no_grad():
                    checkpoint(p.step, model)
            finally:
                model.train()

    last = run_training(
        model,
        loss,
        next_epoch,
        total_steps=total,
        lr=lr if lr is not None else LR,
        warmup=WARMUP,
        weight_decay=0.01,
        progress=progress,
        bank=TokenBank(model, list(texts)),
    )
    for p in model.parameters():
        p.requires_grad_(False)
    model.eval()
    stats = {
        "steps": total,
        "epoch_steps": per_epoch,
        "pairs": len(pairs),
        "epochs": round(total / per_epoch, 3),
        "loss": last,
        "zero_loss_share": round(zero[0] / max(1, zero[1]), 3),
    }
    return model, stats
