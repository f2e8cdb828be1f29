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
import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.training.config import TrainConfig
from core.training.loop import (
    Batch,
    CancelFn,
    ProgressFn,
    StagePace,
    TrainingCancelled,
    run_training,
    seed_everything,
    whole_run,
)
from core.training.model_io import TrainedModel
from core.training.pairs import Labels, anchor_positive_batches, check_trainable, focus_batches
from core.training.precision import bf16_on
from core.training.prefix import PrefixStates, cached_prefix
from core.training.tokens import TokenBank

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from core.training.prefix_store import PrefixStore

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


# A run that continues a tuned encoder with what changed (:func:`focus_batches`): the passes over
# the new and changed labels, and its peak rate as a share of the recipe's. Chosen by
# bench/continue_active.py (bench/RESULTS.md, "A first version that continues from the active
# one").
CONTINUE_PASSES = 4
CONTINUE_LR_SHARE = 0.5


def _base_copy(base: str, device: str) -> SentenceTransformer:
    """The model to train: a deep copy of the process's ``base`` encoder
    (:func:`core.encoding.registry.load_encoder`, read from disk once per process and shared
    with the frozen base's evaluation and the live pool), so training never changes the
    encoder those use, and one job reads the base's folder once at most (issue 44)."""
    from core.encoding.registry import load_encoder

    return copy.deepcopy(load_encoder(base, device=device).model)


def _focus_stage(
    texts: Sequence[str], labels: Labels, focus: Sequence[int], config: TrainConfig
) -> list[Batch]:
    batches = focus_batches(
        labels, focus, config.seed, batch_size=config.batch_size, passes=CONTINUE_PASSES
    )
    return [Batch([[texts[a] for a, _ in b], [texts[p] for _, p in b]]) for b in batches]


def stages(
    texts: Sequence[str],
    labels: Labels,
    config: TrainConfig,
    focus: Sequence[int] | None = None,
) -> list[list[Batch]]:
    """The run's batches in stages, each trained on a schedule of its own (a linear warm-up,
    then a decay to 0) and scored at its end: a **first pass** over the labelled utterances
    (every utterance an anchor once, at most ``config.first_pass`` steps of it), then the
    other ``epochs - 1`` passes. The model after the first pass is finished (its rate decayed):
    a first version serves from it while the rest trains (bench/RESULTS.md, "An anytime
    retrain"). With one epoch the first pass is the run; ``first_pass=0`` trains every pass on
    one schedule.

    Example:
        >>> labels = [("a",), ("a",), ("b",), ("b",)] * 8
        >>> [len(s) for s in stages(["x"] * 32, labels, TrainConfig(batch_size=2, epochs=3))]
        [16, 32]
        >>> cfg = TrainConfig(batch_size=2, epochs=3, first_pass=4)
        >>> [len(s) for s in stages(["x"] * 32, labels, cfg)]
        [4, 32]
        >>> [len(s) for s in stages(["x"] * 32, labels, TrainConfig(batch_size=2, first_pass=0))]
        [64]

    With ``focus`` (a run that continues a tuned encoder), one stage: the focus utterances'
    :data:`CONTINUE_PASSES` passes (:func:`core.training.pairs.focus_batches`).

        >>> [len(s) for s in stages(["x"] * 32, labels, TrainConfig(batch_size=4), focus=[0, 2])]
        [4]
    """
    if focus is not None:
        return [_focus_stage(texts, labels, focus, config)]
    if config.first_pass == 0:
        return [_fast_batches(texts, labels, config, config.epochs)]
    first = _fast_batches(texts, labels, config, 1)
    if config.first_pass is not None:
        first = first[: config.first_pass]
    if config.epochs == 1:
        return [first]
    # the other passes draw their own positives and order (the first pass's seed, moved on)
    rest = dataclasses.replace(config, seed=(config.seed + 1) % 2**32)
    return [first, _fast_batches(texts, labels, rest, config.epochs - 1)]


def _start_copy(start: SentenceTransformer, device: str) -> SentenceTransformer:
    """A copy of ``start`` to train (a trained model's weights are frozen when it is done)."""
    model = copy.deepcopy(start).to(device)
    for p in model.parameters():
        p.requires_grad_(True)
    return model


def planned_steps(
    texts: Sequence[str],
    labels: Labels,
    config: TrainConfig | None = None,
    focus: Sequence[int] | None = None,
) -> int:
    """The optimiser steps :func:`train_encoder` takes on these utterances, without a model:
    what a job's progress weighs its training by before it starts.

    Example:
        >>> labels = [("a",), ("a",), ("b",), ("b",)] * 8
        >>> planned_steps(["x"] * 32, labels, TrainConfig(batch_size=2, epochs=1))
        16
    """
    cfg = config or TrainConfig()
    return sum(len(s) for s in stages(texts, _normalise_labels(labels), cfg, focus))


def checkpoint_steps(
    texts: Sequence[str],
    labels: Labels,
    config: TrainConfig | None = None,
    focus: Sequence[int] | None = None,
) -> list[int]:
    """The steps at which :func:`train_encoder` hands a checkpoint over (each stage's end).

    Example:
        >>> labels = [("a",), ("a",), ("b",), ("b",)] * 8
        >>> checkpoint_steps(["x"] * 32, labels, TrainConfig(batch_size=2, epochs=3))
        [16, 48]
    """
    ends, done = [], 0
    for stage in stages(texts, _normalise_labels(labels), config or TrainConfig(), focus):
        done += len(stage)
        ends.append(done)
    return ends


@dataclass(frozen=True)
class Checkpoint:
    """The model after ``step`` of the run's ``total`` optimiser steps (the end of a stage,
    :func:`stages`): a copy in eval mode while training goes on (the last one is the trained
    model itself), to save, measure and serve."""

    step: int
    total: int
    trained: TrainedModel
    # the frozen layers' states its training computed (valid for it, and for its base encoder
    # when the training started from it: :class:`core.training.prefix.PrefixedEncoder` measures
    # them for half the work); None when nothing was frozen (LoRA)
    prefix: PrefixStates | None = None
    from_base: bool = True  # the training started from its base encoder (not a tuned model)

    @property
    def final(self) -> bool:
        return self.step >= self.total


CheckpointFn = Callable[[Checkpoint], None]


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
    checkpoint: CheckpointFn | None = None,
    start: SentenceTransformer | None = None,
    focus: Sequence[int] | None = None,
    prefixes: PrefixStore | None = None,
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
        checkpoint: called with a :class:`Checkpoint` at the end of each stage
            (:func:`stages`: the first pass, then the whole run), in the training thread:
            training waits for it. What it raises ends the run (``TrainingCancelled`` too).
        start: the model training starts from (a copy of it: an earlier version of ``base``
            tuned already, say); default: the process's ``base`` encoder.
        focus: with ``start``, a continuation: the indices of the utterances whose labels are
            new or changed since ``start`` was trained; one stage of
            :data:`CONTINUE_PASSES` passes over them, each batch filled with other intents'
            examples (:func:`stages`), at :data:`CONTINUE_LR_SHARE` of the recipe's rate.
        prefixes: the frozen layers' states kept across trainings
            (:class:`core.training.prefix_store.PrefixStore`): the texts it knows for this
            model's frozen part are not run through those layers again, the others are added.

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
    model = _base_copy(base, device) if start is None else _start_copy(start, device)
    _stop_if_asked(should_cancel, "loading the encoder")
    model.max_seq_length = config.max_length
    kind = "full"
    if config.method == "lora":
        attach_lora(model, config)
        kind = "adapter"
    else:  # a job queued before the request checked it: a message, not PyTorch's error
        config.check_layers(getattr(_transformer(model).config, "num_hidden_layers", None))
        _freeze(model, config.freeze_embeddings, config.resolved_freeze_layers)

    if focus is not None and start is None:
        raise ValueError("A continuation (focus) needs the tuned model it starts from.")
    plan = stages(texts, labels, config, focus)
    steps = sum(len(stage) for stage in plan)
    lr = config.resolved_lr * (CONTINUE_LR_SHARE if focus is not None else 1.0)
    if steps == 0:
        raise ValueError("The labelled data yields no training pairs.")
    _stop_if_asked(should_cancel, "planning the batches")

    loss = ranking_loss(model, scale=config.scale).to(device)
    frozen = config.resolved_freeze_layers if kind == "full" and config.freeze_embeddings else 0
    seen = [t for stage in plan for batch in stage for column in batch.columns for t in column]
    bank = TokenBank(model, seen)  # every text tokenised once, its tokens on the device
    last, done, paused = float("nan"), 0, 0.0

    def stats(at: int) -> dict[str, Any]:
        return {
            "steps": at,
            "epochs": config.epochs,
            # training's own seconds: the model's copy and load in, the checkpoints' work out
            "seconds": round(time.monotonic() - t0 - paused, 2),
            "loss": last,
            "device": device,
            # the loop's arithmetic: bf16 autocast where the device computes it natively
            "precision": "bf16" if bf16_on(device) else "fp32",
        }

    states: PrefixStates | None = None
    pace = StagePace()  # seconds per step, measured in a stage and kept for the stages after it
    known = prefixes.states(model, frozen) if prefixes is not None and frozen else None
    with cached_prefix(model, seen, frozen, should_cancel, known) as prefix:
        states = prefix.states
        for stage in plan:
            last = run_training(
                model,
                loss,
                stage,
                total_steps=len(stage),
                lr=lr,
                warmup=config.warmup,
                weight_decay=config.weight_decay,
                progress=whole_run(progress, done, len(stage), steps, t0, pace),
                should_cancel=should_cancel,
                bank=bank,
            )
            done += len(stage)
            if checkpoint is not None and done < steps:
                with prefix.whole():  # the copy is the model as it serves, every layer its own
                    copied = _frozen_copy(model)
                # what trains this checkpoint again: the first pass alone
                first = dataclasses.replace(config, epochs=1)
                handed = time.monotonic()
                checkpoint(
                    Checkpoint(
                        done,
                        steps,
                        TrainedModel(copied, base, first, kind, stats(done)),
                        states,
                        start is None,
                    )
                )
                paused += time.monotonic() - handed
    for p in model.parameters():
        p.requires_grad_(False)
    model.eval()
    trained = TrainedModel(model=model, base_encoder=base, config=config, kind=kind)
    trained.stats = stats(steps)
    logger.info("trained %s in %.1f s: %s", config.method, trained.stats["seconds"], trained.stats)
    if checkpoint is not None:
        checkpoint(Checkpoint(steps, steps, trained, states, start is None))
    return trained


def _frozen_copy(model: SentenceTransformer) -> SentenceTransformer:
    """A copy of ``model`` as it is now, in eval mode, with no gradients: a checkpoint that
    training going on does not change."""
    copied = copy.deepcopy(model)
    for p in copied.parameters():
        p.requires_grad_(False)
    copied.eval()
    return copied
