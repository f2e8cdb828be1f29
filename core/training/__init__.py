"""Specialise a sentence encoder on labelled utterances (ConvFiT-style in-batch ranking, LoRA).

Example:
    >>> from core.training import TrainConfig, train_encoder, load_trained  # doctest: +SKIP
    >>> trained = train_encoder("minilm", texts, labels, TrainConfig())  # doctest: +SKIP
    >>> trained.save(Path("models/v1"))  # doctest: +SKIP
    >>> encoder = load_trained(Path("models/v1"))  # doctest: +SKIP
"""

from __future__ import annotations

from core.training.config import TrainConfig
from core.training.eta import Eta
from core.training.fit import planned_steps, train_encoder
from core.training.loop import TrainingCancelled, TrainProgress
from core.training.model_io import (
    TrainedModel,
    artifact_sha256,
    load_label_encoder,
    load_trained,
    read_metadata,
)
from core.training.trainable import Trainable, check_trainable, trainable

__all__ = [
    "Eta",
    "TrainConfig",
    "TrainProgress",
    "Trainable",
    "TrainedModel",
    "TrainingCancelled",
    "artifact_sha256",
    "check_trainable",
    "load_label_encoder",
    "load_trained",
    "planned_steps",
    "read_metadata",
    "train_encoder",
    "trainable",
]
