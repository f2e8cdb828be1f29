"""Specialise a sentence encoder on labelled utterances (ConvFiT Stage 2 with an in-batch ranking
loss, or the same on LoRA adapters).

Example:
    >>> from core.training import TrainConfig, train_encoder, load_trained  # doctest: +SKIP
    >>> trained = train_encoder("minilm", texts, labels, TrainConfig())  # doctest: +SKIP
    >>> trained.save(Path("models/v1"))  # doctest: +SKIP
    >>> encoder = load_trained(Path("models/v1"))  # doctest: +SKIP

What describes and reads a training (its settings, its data checks, a version's files) loads
with the package; the training loop (:mod:`core.training.fit`, :mod:`core.training.loop`: torch)
loads when one of its names is first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.method_names import METHOD_LINES, canonical_method, method_choices, method_title
from core.training.config import TrainConfig
from core.training.eta import Eta
from core.training.model_io import (
    TrainedModel,
    artifact_sha256,
    load_label_encoder,
    load_trained,
    read_metadata,
)
from core.training.trainable import Trainable, check_trainable, trainable

if TYPE_CHECKING:
    from core.training.fit import Checkpoint, checkpoint_steps, planned_steps, train_encoder
    from core.training.loop import TrainingCancelled, TrainProgress

# The training loop's names, from the modules that import torch: loaded on first use (PEP 562),
# so a process that only reads a version (serving its int8 copy, a bundle) never imports torch.
_TRAINING_LOOP = {
    "Checkpoint": "core.training.fit",
    "checkpoint_steps": "core.training.fit",
    "planned_steps": "core.training.fit",
    "train_encoder": "core.training.fit",
    "TrainingCancelled": "core.training.loop",
    "TrainProgress": "core.training.loop",
}


def __getattr__(name: str) -> Any:
    module = _TRAINING_LOOP.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "METHOD_LINES",
    "Checkpoint",
    "Eta",
    "TrainConfig",
    "TrainProgress",
    "Trainable",
    "TrainedModel",
    "TrainingCancelled",
    "artifact_sha256",
    "canonical_method",
    "check_trainable",
    "checkpoint_steps",
    "load_label_encoder",
    "load_trained",
    "method_choices",
    "method_title",
    "planned_steps",
    "read_metadata",
    "train_encoder",
    "trainable",
]
