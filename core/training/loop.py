"""A small, seeded training loop: AdamW, linear warm-up and decay, progress, cancellation.

Faster on CPU than the Hugging Face Trainer for our few-hundred-step runs: no dataset objects, no
collator processes, dynamic padding. Every text is tokenised once and its tokens kept on the
device (:class:`~core.training.tokens.TokenBank`). The forward pass runs under bf16 autocast
where the device computes bf16 natively (a CUDA GPU, a CPU with AMX or AVX512-BF16:
:mod:`core.training.precision`). On CUDA the loop does not wait for the device at each step: the
loss is read back every :data:`SYNC_STEPS` steps (progress shows the last one read); on the CPU,
where reading it costs nothing, every step, as before.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from core.encoding.exit_gate import NATIVE
from core.training.eta import Eta
from core.training.precision import bf16_on
from core.training.tokens import TokenBank

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)


class TrainingCancelled(RuntimeError):
    """Raised inside training when ``should_cancel()`` returned True."""


@dataclass(frozen=True)
class TrainProgress:
    """One progress report: steps done of the total, the last loss, seconds so far and left
    (``eta`` is None until the time per step has been measured, see :class:`Eta`)."""

    step: int
    total: int
    loss: float
    elapsed: float
    eta: float | None


ProgressFn = Callable[[TrainProgress], None]
CancelFn = Callable[[], bool]


@dataclass(frozen=True)
class Batch:
    """Columns of texts (e.g. anchors, positives) and the labels the loss expects."""

    columns: list[list[str]]
    labels: torch.Tensor | None = None


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (CPU and CUDA)."""
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


# Steps between two reads of the loss on CUDA (each read waits for the device).
SYNC_STEPS = 25


def embed_unpadded(
    model: SentenceTransformer,
    columns: list[list[str]],
    chunk: int = 16,
    *,
    bank: TokenBank | None = None,
) -> list[torch.Tensor]:
    """Embed every column with gradients, in length-sorted chunks to avoid padding waste.

    Padding a batch of short utterances to its longest one wastes most of the compute on CPU;
    sorting the batch's texts by length and running chunks of similar length cuts the tokens
    processed (and the time per step) roughly in half on intent data. ``bank``: the run's
    texts tokenised once (default: these texts, tokenised now).
    """
    texts = [t for col in columns for t in col]
    bank = bank if bank is not None else TokenBank(model, texts)
    rows = bank.rows(texts)
    lengths = torch.tensor([bank.lengths[r] for r in rows])
    order = torch.argsort(lengths, descending=True, stable=True)
    picked = order.tolist()
    parts: list[torch.Tensor] = []
    for start in range(0, len(texts), chunk):
        parts.append(
            model(bank.features([rows[i] for i in picked[start : start + chunk]]))[
                "sentence_embedding"
            ]
        )
    sorted_emb = torch.cat(parts)
    emb = torch.empty_like(sorted_emb)
    emb[bank.index(order)] = sorted_emb
    out, offset = [], 0
    for col in columns:
        out.append(emb[offset : offset + len(col)])
        offset += len(col)
    return out


def _attention_kernels(cuda: bool) -> contextlib.AbstractContextManager[object]:
    """On CUDA, attention by the flash, memory-efficient or math kernel, not cuDNN's.

    Under bf16 autocast torch prefers cuDNN's attention, which builds a graph for every new
    (batch, width) shape; length-sorted chunks come in every width, so on an H200 a 100-step
    BANKING77 run spent 8-19 s in those builds against 4.5 s without them (bench/RESULTS.md)."""
    if not cuda:
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel(
        [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
    )


@contextlib.contextmanager
def _training(
    model: nn.Module, loss: nn.Module, opt: torch.optim.Optimizer, cuda: bool
) -> Iterator[None]:
    """Train mode and the attention kernels for the loop; eval mode and no gradients after."""
    with _attention_kernels(cuda):
        model.train()
        loss.train()
        try:
            yield
        finally:
            model.eval()
            loss.eval()
            opt.zero_grad(set_to_none=True)


def _optimizer(
    params: Sequence[tuple[str, nn.Parameter]], lr: float, weight_decay: float
) -> torch.optim.Optimizer:
    decay = [p for n, p in params if p.ndim > 1 and "LayerNorm" not in n and "norm" not in n]
    no_decay = [
        p for n, p in params if not (p.ndim > 1 and "LayerNorm" not in n and "norm" not in n)
    ]
    groups = [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=lr)


def run_training(
    model: SentenceTransformer,
    loss: nn.Module,
    batches: Sequence[Batch] | Callable[[], Sequence[Batch]],
    *,
    total_steps: int,
    lr: float,
    warmup: float,
    weight_decay: float,
    progress: ProgressFn | None = None,
    should_cancel: CancelFn | None = None,
    bank: TokenBank | None = None,
) -> float:
    """Train ``model`` (and any parameters of ``loss``) over ``batches``; returns the last loss.

    Args:
        model: the sentence-transformers model; only parameters with ``requires_grad`` train.
        loss: a loss module with ``forward(list_of_features, labels)``, or with
            ``compute_loss_from_embeddings(embeddings, labels)`` (then the columns are embedded
            by :func:`embed_unpadded`). Its own trainable parameters (a softmax head's, say)
            train with the model's.
        batches: the batches of one epoch, or a function producing the next epoch's batches;
            epochs repeat until ``total_steps``.
        total_steps: optimiser steps in all.
        lr: peak learning rate.
        warmup: fraction of steps of linear warm-up (then linear decay to 0).
        weight_decay: AdamW weight decay (not applied to biases and norms).
        progress: called after every step.
        should_cancel: polled before every step; True raises :class:`TrainingCancelled`.
        bank: every text of the batches tokenised once (default: tokenised as they come).
    """
    device = torch.device(model.device)
    cuda = device.type == "cuda"
    # bf16 autocast where the device computes it natively (core.training.precision)
    bf16 = bf16_on(device)
    sync_every = SYNC_STEPS if cuda else 1
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    named += [(f"loss.{n}", p) for n, p in loss.named_parameters() if p.requires_grad]
    seen: set[int] = set()
    unique = []
    for n, p in named:
        if id(p) not in seen:
            seen.add(id(p))
            unique.append((n, p))
    opt = _optimizer(unique, lr, weight_decay)
    warm = round(total_steps * warmup)

    def factor(step: int) -> float:
        if step < warm:
            return (step + 1) / max(1, warm)
        return max(0.0, (total_steps - step) / max(1, total_steps - warm))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    start = time.monotonic()
    eta = Eta(total_steps)
    step = 0
    last = float("nan")
    unread: torch.Tensor | None = None  # the latest loss, still on the device
    with _training(model, loss, opt, cuda):
        while step < total_steps:
            epoch = batches() if callable(batches) else batches
            if not epoch:
                raise ValueError("No training batches: the data yields no pairs.")
            for batch in epoch:
                if step >= total_steps:
                    break
                if should_cancel is not None and should_cancel():
                    raise TrainingCancelled(f"cancelled at step {step} of {total_steps}")
                # an exit waits for the step (core.encoding.exit_gate): every torch call of it,
                # the loss's read included, releases the GIL inside libtorch
                with NATIVE.running():
                    labels = batch.labels
                    if labels is None:
                        labels = torch.zeros(len(batch.columns[0]), device=device)
                    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                        value = _loss_of(model, loss, batch.columns, labels, bank)
                    opt.zero_grad(set_to_none=True)
                    value.backward()
                    torch.nn.utils.clip_grad_norm_([p for _, p in unique], 1.0)
                    opt.step()
                    sched.step()
                    step += 1
                    unread = value.detach()
                    if step % sync_every == 0 or step >= total_steps:
                        last, unread = float(unread), None
                left = eta.update(step)
                if progress is not None:
                    elapsed = time.monotonic() - start
                    progress(TrainProgress(step, total_steps, last, elapsed, left))
    if unread is not None:  # stopped between two reads
        last = float(unread)
    logger.info("%d steps in %.1f s, last loss %.4f", step, time.monotonic() - start, last)
    return last


def _loss_of(
    model: SentenceTransformer,
    loss: nn.Module,
    columns: list[list[str]],
    labels: torch.Tensor,
    bank: TokenBank | None,
) -> torch.Tensor:
    """The batch's loss: from the length-sorted embeddings when the loss takes embeddings,
    else from each column's features (the loss embeds them)."""
    from_embeddings: Any = getattr(loss, "compute_loss_from_embeddings", None)
    if from_embeddings is not None:
        value: torch.Tensor = from_embeddings(embed_unpadded(model, columns, bank=bank), labels)
        return value
    bank = bank if bank is not None else TokenBank(model, [t for col in columns for t in col])
    value = loss([bank.features(bank.rows(col)) for col in columns], labels)
    return value


class StagePace:
    """The training's seconds per step as its stages measured it (None before any did)."""

    per_step: float | None = None


def whole_run(
    progress: ProgressFn | None,
    before: int,
    stage: int,
    total: int,
    started: float,
    pace: StagePace | None = None,
) -> ProgressFn | None:
    """A stage's progress as the whole run's: its steps after the ``before`` of the stages
    before it, of all ``total``; the time left at the stage's own measured pace (a checkpoint's
    pause between two stages is no step's time). ``pace`` carries that pace from stage to stage:
    a stage's last step (its own time left 0) and the next stage's first steps (not timed yet)
    say the whole run's time left at the pace measured before, not 0 and not "estimating…".

    Example:
        >>> said = []
        >>> pace = StagePace()
        >>> first = whole_run(said.append, 0, 10, 30, 0.0, pace)
        >>> first(TrainProgress(5, 10, 0.5, 5.0, 5.0)); first(TrainProgress(10, 10, 0.5, 10.0, 0.0))
        >>> then = whole_run(said.append, 10, 20, 30, 0.0, pace)
        >>> then(TrainProgress(1, 20, 0.5, 11.0, None))
        >>> [p.eta for p in said]
        [25.0, 20.0, 19.0]
    """
    if progress is None:
        return None
    pace = pace or StagePace()

    def report(p: TrainProgress) -> None:
        if p.eta is not None and p.step < stage:
            pace.per_step = p.eta / (stage - p.step)
        left = None if pace.per_step is None else pace.per_step * (total - before - p.step)
        elapsed = time.monotonic() - started
        progress(TrainProgress(before + p.step, total, p.loss, elapsed, left))

    return report
