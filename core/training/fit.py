"""``train_encoder``: specialise a base encoder on labelled utterances.

Methods (``TrainConfig.method``):

- ``"convfit"`` (default; ``"fast"`` is its older name): ConvFiT Stage 2, contrastive
  task-tuning of the sentence encoder with an in-batch ranking loss (multiple-negatives ranking
  over class-disjoint batches of (anchor, same-intent positive) pairs, both ways, a few passes
  with a higher learning rate). Every other item in a batch is a true negative, so each step sees
  ~``batch_size``² contrasts instead of the paper's ``batch_size`` sampled pairs (which lost to it
  on every seed of BANKING77 and CLINC150 and left the product: bench/RESULTS.md).
- ``"lora"``: the same recipe training only LoRA adapters; the artifact is the adapter.

Example:
    >>> trained = train_encoder("minilm", texts, labels, TrainConfig())  # doctest: +SKIP
    >>> trained.encoder().encode(["card not working"]).shape  # doctest: +SKIP
    (1, 384)
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from core.training.config import TrainConfig
from core.training.loop import (
    Batch,
    CancelFn,
    ProgressFn,
    TrainingCancelled,
    run_training,
    seed_everything,
)
from core.training.model_io import TrainedModel
from core.training.pairs import Labels, anchor_positive_batches, check_trainable
from core.training.precision import bf16_on
from core.training.prefix import cached_prefix
from core.training.tokens import TokenBank

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)


def _normalise_labels(labels: Labels) -> list[tuple[str, ...]]:
    out = []
    for lab in labels:
        if isinstance(lab, str):
            raise ValueError("labels must be tuples of intent names, e.g. ('greet',), not strings.")
        out.append(tuple(lab))
    return out


def _transformer(model: SentenceTransformer) -> Any:
    """The Hugging Face model inside the first (Transformer) module."""
    module: Any = model[0]
    return module.model


def _freeze(model: SentenceTransformer, embeddings: bool, layers: int) -> None:
    """Freeze the token embeddings and/or the ``layers`` lowest transformer layers."""
    for name, p in _transformer(model).named_parameters():
        lower = any(f"layer.{i}." in name for i in range(layers))
        if lower or (embeddings and "embeddings" in name):
            p.requires_grad_(False)


def _fast_batches(
    texts: Sequence[str],
    labels: Labels,
    config: TrainConfig,
    passes: int,
) -> list[Batch]:
    """Class-disjoint (anchor, positive) batches."""
    idx_batches = anchor_positive_batches(
        labels, config.seed, batch_size=config.batch_size, passes=passes
    )
    return [Batch([[texts[a] for a, _ in b], [texts[p] for _, p in b]]) for b in idx_batches]


def _base_copy(base: str, device: str) -> SentenceTransformer:
    """The model to train: a deep copy of the process's ``base`` encoder
    (:func:`core.encoding.registry.load_encoder`, read from disk once per process and shared
    with the frozen base's evaluation and the live pool), so training never changes the
    encoder those use, and one job reads the base's folder once at most (issue 44)."""
    from core.encoding.registry import load_encoder

    return copy.deepcopy(load_encoder(base, device=device).model)


def planned_steps(texts: Sequence[str], labels: Labels, config: TrainConfig | None = None) -> int:
    """The optimiser steps :func:`train_encoder` takes on these utterances, without a model:
    what a job's progress weighs its training by before it starts.

    Example:
        >>> labels = [("a",), ("a",), ("b",), ("b",)] * 8
        >>> planned_steps(["x"] * 32, labels, TrainConfig(batch_size=2, epochs=1))
        16
    """
    config = config or TrainConfig()
    labels = _normalise_labels(labels)
    batches = anchor_positive_batches(
        labels, config.seed, batch_size=config.batch_size, passes=config.epochs
    )
    return len(batches)


def _stop_if_asked(should_cancel: CancelFn | None, where: str) -> None:
    if should_cancel is not None and should_cancel():
        raise TrainingCancelled(f"cancelled while {where}")


def train_encoder(
    base: str,
    texts: Sequence[str],
    labels: Labels,
    config: TrainConfig | None = None,
    *,
    progress: ProgressFn | None = None,
    should_cancel: CancelFn | None = None,
    device: str | None = None,
) -> TrainedModel:
    """Train a task-specialised encoder from labelled utterances.

    Args:
        base: registry name (``"minilm"``, ``"mpnet"``) or a local sentence-transformers folder.
        texts: the labelled utterances.
        labels: one tuple of intent names per utterance (``()`` = no intent: never an anchor).
        config: the run's settings (default: ``TrainConfig()``, ConvFiT Stage 2).
        progress: called after every optimiser step with a
            :class:`~core.training.loop.TrainProgress`.
        should_cancel: polled before loading the model, once it is loaded, once the batches
            are planned and before every step; returning True raises
            :class:`TrainingCancelled` (well within a second per step on CPU).
        device: ``"cuda"``/``"cpu"``; default CUDA when available.

    Returns:
        The :class:`TrainedModel` (call ``.save(dir)`` or ``.encoder()``).

    Raises:
        ValueError: for unusable data (fewer than 2 intents with 2 examples, …). An intent with
            one example does not refuse: :func:`core.training.trainable.trainable` leaves it out.
        TrainingCancelled: when ``should_cancel()`` returned True.
    """
    from core.encoding.registry import default_device
    from core.training.lora import attach_lora
    from core.training.losses import ranking_loss

    config = config or TrainConfig()
    labels = _normalise_labels(labels)
    if len(texts) != len(labels):
        raise ValueError(f"texts and labels differ in length ({len(texts)} vs {len(labels)}).")
    check_trainable(labels)
    device = device or default_device()
    t0 = time.monotonic()
    seed_everything(config.seed)
    _stop_if_asked(should_cancel, "loading the encoder")
    model = _base_copy(base, device)
    _stop_if_asked(should_cancel, "loading the encoder")
    model.max_seq_length = config.max_length
    kind = "full"
    if config.method == "lora":
        attach_lora(model, config)
        kind = "adapter"
    else:  # a job queued before the request checked it: a message, not PyTorch's error
        config.check_layers(getattr(_transformer(model).config, "num_hidden_layers", None))
        _freeze(model, config.freeze_embeddings, config.resolved_freeze_layers)

    plan = _fast_batches(texts, labels, config, config.epochs)
    steps = len(plan)
    if steps == 0:
        raise ValueError("The labelled data yields no training pairs.")
    _stop_if_asked(should_cancel, "planning the batches")

    loss = ranking_loss(model, scale=config.scale).to(device)
    frozen = config.resolved_freeze_layers if kind == "full" and config.freeze_embeddings else 0
    seen = [t for batch in plan for column in batch.columns for t in column]
    bank = TokenBank(model, seen)  # every text tokenised once, its tokens on the device
    with cached_prefix(model, seen, frozen):
        last = run_training(
            model,
            loss,
            plan,
            total_steps=steps,
            lr=config.resolved_lr,
            warmup=config.warmup,
            weight_decay=config.weight_decay,
            progress=progress,
            should_cancel=should_cancel,
            bank=bank,
        )
    for p in model.parameters():
        p.requires_grad_(False)
    model.eval()
    seconds = time.monotonic() - t0
    stats = {
        "steps": steps,
        "epochs": config.epochs,
        "seconds": round(seconds, 2),
        "loss": last,
        "device": device,
        # the loop's arithmetic: bf16 autocast where the device computes it natively
        "precision": "bf16" if bf16_on(device) else "fp32",
    }
    logger.info("trained %s in %.1f s: %s", config.method, seconds, stats)
    return TrainedModel(
        model=model,
        base_encoder=base,
        config=config,
        kind=kind,
        stats=stats,
    )
