"""ConvFiT Stage 1 (adaptive tuning): in-batch ranking on (context, response) pairs.

The user's own chat logs (e.g. the bot's question and the user's reply) teach the encoder the
domain's conversational language before Stage 2. Responses of other pairs in the batch are the
negatives (multiple-negatives ranking with a scaled cosine).
"""

from __future__ import annotations

import csv
import logging
import random
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from core.training.loop import Batch, CancelFn, ProgressFn, run_training

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from core.training.config import TrainConfig

logger = logging.getLogger(__name__)


def read_context_pairs(path: Path) -> list[tuple[str, str]]:
    """Read a CSV with ``context`` and ``response`` columns into (context, response) pairs.

    Raises:
        ValueError: when the columns are missing or no non-empty pair is found.
    """
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        cols = set(reader.fieldnames or [])
        if not {"context", "response"} <= cols:
            raise ValueError(
                f"{path.name}: need columns 'context' and 'response', got {sorted(cols)}."
            )
        pairs = [
            (row["context"].strip(), row["response"].strip())
            for row in reader
            if row["context"]
            and row["response"]
            and row["context"].strip()
            and row["response"].strip()
        ]
    if not pairs:
        raise ValueError(f"{path.name}: no (context, response) pairs found.")
    return pairs


def stage1_batches(pairs: Sequence[tuple[str, str]], batch_size: int, seed: int) -> list[Batch]:
    """Shuffled batches of (context, response) pairs; repeated contexts never share a batch."""
    rng = random.Random(seed)
    order = list(range(len(pairs)))
    rng.shuffle(order)
    batches: list[Batch] = []
    current: list[int] = []
    seen: set[str] = set()
    pending: list[int] = []
    for idx in order:
        ctx, resp = pairs[idx]
        if ctx in seen or resp in seen:
            pending.append(idx)
            continue
        current.append(idx)
        seen.update((ctx, resp))
        if len(current) == batch_size:
            batches.append(_batch(pairs, current))
            current, seen = [], set()
            order.extend(pending)
            pending = []
    if len(current) >= 2:
        batches.append(_batch(pairs, current))
    return batches


def _batch(pairs: Sequence[tuple[str, str]], idx: list[int]) -> Batch:
    return Batch([[pairs[i][0] for i in idx], [pairs[i][1] for i in idx]])


def plan_stage1(pairs: Sequence[tuple[str, str]], config: TrainConfig) -> list[list[Batch]]:
    """The batches of every Stage 1 epoch.

    Raises:
        ValueError: with fewer than 2 pairs.
    """
    if len(pairs) < 2:
        raise ValueError("Stage 1 needs at least 2 (context, response) pairs.")
    batch_size = min(config.stage1_batch_size, len(pairs))
    return [stage1_batches(pairs, batch_size, config.seed + e) for e in range(config.stage1_epochs)]


def run_stage1(
    model: SentenceTransformer,
    plan: list[list[Batch]],
    config: TrainConfig,
    *,
    progress: ProgressFn | None = None,
    should_cancel: CancelFn | None = None,
) -> float:
    """Adaptive tuning of ``model`` in place over the batches of :func:`plan_stage1`.

    Returns:
        The last loss.
    """
    from core.training.losses import build_loss

    total = sum(len(e) for e in plan)
    it = iter(plan)
    loss = build_loss(model, "mnrl", scale=config.scale, symmetric=False)
    return run_training(
        model,
        loss,
        lambda: next(it),
        total_steps=total,
        lr=config.stage1_lr,
        warmup=config.warmup,
        weight_decay=config.weight_decay,
        progress=progress,
        should_cancel=should_cancel,
        stage="stage1",
    )
