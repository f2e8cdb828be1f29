"""``TrainConfig``: every knob of a specialisation run, validated and stored as JSON.

A config is saved with every model version (``model.json``) so a run can be repeated exactly.

Example:
    >>> cfg = TrainConfig(method="lora", epochs=6)
    >>> TrainConfig.from_dict(cfg.to_dict()) == cfg
    True
"""

from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass
from typing import Any

from core.method_names import TRAINING_METHODS, canonical_method, method_choices

logger = logging.getLogger(__name__)

# ConvFiT Stage 2 as the paper trains it (sampled pairs, the online contrastive loss, 3 random
# negatives per positive, 10 epochs) lost to the in-batch ranking loss on every seed of both data
# sets; a version trained with it is a full encoder and keeps serving (its ``model.json`` names
# the method ``convfit``), it just cannot be trained again.
CONVFIT_RETIRED = (
    "ConvFiT Stage 2 on sampled pairs (the paper's recipe) lost to its in-batch ranking loss, "
    "the default, on every one of 3 seeds on BANKING77 and CLINC150 at the same step budget "
    "(median -1.5 and -2.6 points with OCL, -2.0 and -2.9 with COS, -6.5 and -15.5 with SMAX) "
    "for 2-3.4x the CPU time (bench/RESULTS.md); the paper's 10-epoch recipe takes hours on a CPU"
)


# LoRA's adapter shape past its rank was never measured against its defaults (bench/RESULTS.md
# compares the method, not these); it is fixed in core/training/lora.py.
LORA_FIXED = (
    "the LoRA adapter's alpha, dropout and target modules are fixed at 16, 0.1 and the "
    "attention's query and value (never measured against other values); its rank (lora_r) stays"
)


class AnyOf(tuple[Any, ...]):
    """Several values that each meant "off" for a :data:`RETIRED` option."""


# Options that left TrainConfig, with the value that meant "off": a stored config (an older
# version's ``model.json``, a queued job) that holds one at that value still reads; any other
# value is refused with why it left. A version trained with one keeps serving as it was
# (``core.training.model_io.load_label_encoder``), it just cannot be trained again.
RETIRED: dict[str, tuple[Any, str]] = {
    "loss": (
        AnyOf((None, "mnrl")),
        f"ConvFiT's in-batch ranking is the only loss: {CONVFIT_RETIRED}",
    ),
    "margin": (0.5, f"it set up ConvFiT's online contrastive loss: {CONVFIT_RETIRED}"),
    "lora_alpha": (16, LORA_FIXED),
    "lora_dropout": (0.1, LORA_FIXED),
    "lora_targets": (AnyOf((["query", "value"], ("query", "value"))), LORA_FIXED),
    "negatives": (3, f"it set up ConvFiT's sampled pairs: {CONVFIT_RETIRED}"),
    "max_pairs": (
        AnyOf((None, 20000)),
        f"it capped ConvFiT's sampled pairs: {CONVFIT_RETIRED}",
    ),
    "label_encoder": (
        "shared",
        "a separate (non-siamese) label encoder lost to the shared one with the same anchor "
        "pairs on BANKING77 and CLINC150 over 3 seeds, for 40-45 % more training "
        "(bench/RESULTS.md): it is no longer trained",
    ),
    "anchor_pairs": (
        False,
        "(utterance, description or name) pairs won on BANKING77 (+0.7 points) but tied on "
        "CLINC150 (0.0) over 3 seeds, for 14-19 % more training (bench/RESULTS.md); the "
        "descriptions and names still count in every prediction (the anchor weight setting)",
    ),
    "projection_dim": (
        None,
        "a 128-d projection (ConvFiT's d_o) lost 0.7 points on BANKING77 and on CLINC150 over 3 "
        "seeds, at the same training time (bench/RESULTS.md)",
    ),
    "interpolate": (
        1.0,
        "WiSE-FT interpolation at 0.5 lost 0.3 points on BANKING77 and 0.7 on CLINC150 over 3 "
        "seeds (bench/RESULTS.md)",
    ),
    "label_layers": (None, "it sized the separate label encoder, which is no longer trained"),
    "self_train": (
        0,
        "a second pass on 50 pseudo-labels per intent tied on CLINC150 (92.8 both, over 3 "
        "seeds) for about 6x the training time, after +1.2 points on BANKING77 "
        "(bench/RESULTS.md): it is no longer trained",
    ),
    "template_fill": (
        0,
        "TaDSE template filling (20 per intent) lost 0.4 points on BANKING77 (86.2 against "
        "86.6) and on CLINC150 (92.4 against 92.8) over 3 seeds, for 1.3-1.8x the training time "
        "(bench/RESULTS.md): templates no longer train the encoder",
    ),
    "template_loss": (
        0.0,
        "TaDSE's template loss (0.5, with template_fill=20) lost 0.3 points on BANKING77 (86.3 "
        "against 86.6) and 0.5 on CLINC150 (92.3 against 92.8) over 3 seeds, for 1.7-2.5x the "
        "training time (bench/RESULTS.md): templates no longer train the encoder",
    ),
    "distil_weight": (
        0.0,
        "distillation from a teacher encoder (mpnet) was measured on one seed of BANKING77 only "
        "(86.8 to 87.7 %, for 1.5x the training time) and no product surface used it (the app "
        "computes no teacher's vectors; bench/RESULTS.md): it is no longer trained",
    ),
    "distil_batch": (32, "it set up distillation (distil_weight), which is no longer trained"),
    "distil_loss": ("kl", "it set up distillation (distil_weight), which is no longer trained"),
    "distil_temperature": (
        0.05,
        "it set up distillation (distil_weight), which is no longer trained",
    ),
    "stage1": (
        False,
        "ConvFiT Stage 1 (in-batch ranking on a project's (context, response) pairs before "
        "Stage 2) was never measured: none of our data sets has dialogue context, and the "
        "encoders we ship were already trained this way on over a billion sentence pairs, 726 "
        "million of them Reddit (comment, reply) pairs (bench/RESULTS.md); imported contexts "
        "still count when a project encodes context",
    ),
    "stage1_epochs": (2, "it set up ConvFiT Stage 1 (stage1), which is no longer trained"),
    "stage1_batch_size": (64, "it set up ConvFiT Stage 1 (stage1), which is no longer trained"),
    "stage1_lr": (2e-5, "it set up ConvFiT Stage 1 (stage1), which is no longer trained"),
    "symmetric": (
        True,
        "one-directional in-batch ranking (symmetric=False) tied the two-directional default "
        "(81.2 against 81.4 % on BANKING77, 90.9 against 90.9 % on CLINC150, 5 shots, seed 0; "
        "bench/RESULTS.md): the ranking loss always runs both ways",
    ),
    "pair_strategy": (
        "convfit",
        "positive pairs without negatives (pair_strategy='all') lost 2.8 points on BANKING77 and "
        "3.6 on CLINC150 against the in-batch default (5 shots, seed 0; bench/RESULTS.md); "
        "the in-batch losses it was meant for never read it: ConvFiT's pairs always carry "
        "their negatives",
    ),
}


@dataclass(frozen=True)
class TrainConfig:
    """Settings of one training run.

    Attributes:
        method: ``"convfit"`` (ConvFiT Stage 2: contrastive task-tuning of the sentence encoder
            with an in-batch ranking loss over class-disjoint batches of same-intent pairs, both
            ways; the default; ``"fast"``, its older name, reads as it) or ``"lora"`` (the same
            recipe training only LoRA adapters: a version's trained weights are a 300 KB adapter
            instead of an 88 MB encoder).
        epochs: passes over the labelled data (every utterance is an anchor once a pass).
        batch_size: (anchor, positive) pairs per step, no two of them sharing an intent.
        lr: AdamW learning rate.
        warmup: fraction of steps of linear warm-up, then linear decay to 0.
        weight_decay: AdamW weight decay.
        max_length: tokens per utterance.
        seed: seeds sampling, shuffling and initialisation.
        scale: in-batch similarity scale (1 / temperature).
        freeze_embeddings: keep the token embeddings frozen (faster steps; few-shot data cannot
            train a 30k-row matrix anyway).
        freeze_layers: number of lowest transformer layers to freeze as well (with the
            embeddings frozen, their outputs are computed once per utterance and cached,
            :mod:`core.training.prefix`); ``None`` = the method's default
            (:attr:`resolved_freeze_layers`): 3 for ``convfit`` (half of MiniLM: a BANKING77
            10-shot retrain trains in ~40 s instead of ~75 s on 2 cores, at the same accuracy or
            better; ``bench/train.py``, ``fast`` against ``fast_full``), 0 for ``lora``
            (adapters only).
        lora_r: LoRA rank.
        first_pass: optimiser steps of the first pass, trained on a schedule of its own and
            handed over as a first version while the other passes train
            (:func:`core.training.fit.stages`): ``None`` = one whole pass over the labelled
            utterances, ``N`` = at most N steps of it (a retrain's worker sets it from its
            device's compute budget), ``0`` = no first pass (every pass on one schedule).
    """

    method: str = "convfit"
    epochs: int = 4
    batch_size: int = 32
    lr: float | None = None
    warmup: float = 0.1
    weight_decay: float = 0.01
    max_length: int = 48
    seed: int = 0
    scale: float = 20.0
    freeze_embeddings: bool = True
    freeze_layers: int | None = None
    lora_r: int = 8
    first_pass: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.method, str) or (
            canonical_method(self.method) not in TRAINING_METHODS
        ):
            raise ValueError(f"Unknown method {self.method!r}: use {method_choices()}.")
        object.__setattr__(self, "method", canonical_method(self.method))
        _check_int("epochs", self.epochs, 1, 100)
        _check_int("batch_size", self.batch_size, 2, 4096)
        if self.lr is not None:
            _check_range("lr", self.lr, 0.0, 1.0, low_open=True)
        _check_range("warmup", self.warmup, 0.0, 1.0, high_open=True)
        _check_range("weight_decay", self.weight_decay, 0.0, 1.0)
        _check_int("max_length", self.max_length, 4, 512)
        _check_int("seed", self.seed, 0, 2**32 - 1)
        _check_range("scale", self.scale, 0.0, 1000.0, low_open=True)
        if self.freeze_layers is not None:
            _check_int("freeze_layers", self.freeze_layers, 0, 100)
        _check_int("lora_r", self.lora_r, 1, 256)
        if self.first_pass is not None:
            _check_int("first_pass", self.first_pass, 0, 1_000_000)

    def check_layers(self, layers: int | None) -> None:
        """Refuse (``ValueError``, with the valid range) an explicit ``freeze_layers`` that
        would leave no transformer layer of an encoder with ``layers`` layers to train (None:
        unknown, nothing to check).

        >>> TrainConfig(freeze_layers=99).check_layers(6)
        Traceback (most recent call last):
        ...
        ValueError: freeze_layers must be between 0 and 5 for this encoder (6 layers; at least the top one trains), got 99.
        """
        if layers is None or self.freeze_layers is None or self.freeze_layers < layers:
            return
        raise ValueError(
            f"freeze_layers must be between 0 and {layers - 1} for this encoder ({layers} "
            f"layers; at least the top one trains), got {self.freeze_layers}."
        )

    @property
    def resolved_freeze_layers(self) -> int:
        """Lowest transformer layers kept frozen: the given number or the method's default."""
        if self.freeze_layers is not None:
            return self.freeze_layers
        return 3 if self.method == "convfit" else 0

    @property
    def resolved_lr(self) -> float:
        """The learning rate actually used: the given one or the method's (tuned) default."""
        if self.lr is not None:
            return self.lr
        return {"convfit": 1e-4, "lora": 1e-3}[self.method]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        """Rebuild a config from :meth:`to_dict` output; unknown keys raise ``ValueError``, and
        so does a :data:`RETIRED` option at any value but its old "off". An older config's
        ``fast_passes`` (the passes when ``epochs`` was None) reads as ``epochs``.

        >>> TrainConfig.from_dict({"label_encoder": "shared"}) == TrainConfig()
        True
        >>> TrainConfig.from_dict({"epochs": None, "fast_passes": 6}).epochs
        6
        """
        kwargs = dict(data)
        if kwargs.get("method") == "convfit" and kwargs.get("loss", "mnrl") != "mnrl":
            # "loss" was in every config until the pair recipe left; with ``convfit`` and no
            # in-batch loss it named the pairs (None meant OCL then), not today's ConvFiT
            raise ValueError(
                f"method='convfit' with loss={data['loss']!r} (ConvFiT on sampled pairs, what it "
                f"meant until that recipe left) is no longer an option: {CONVFIT_RETIRED}."
            )
        for name, (off, why) in RETIRED.items():
            if name in kwargs and not _is_off(kwargs.pop(name), off):
                raise ValueError(f"{name}={data[name]!r} is no longer an option: {why}.")
        if "fast_passes" in kwargs:
            passes = kwargs.pop("fast_passes")
            if kwargs.get("epochs") is None:
                kwargs["epochs"] = passes
        if kwargs.get("epochs", 0) is None:
            kwargs.pop("epochs")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(kwargs) - names)
        if unknown:
            raise ValueError(f"Unknown TrainConfig keys: {', '.join(unknown)}.")
        return cls(**kwargs)


def _is_off(value: Any, off: Any) -> bool:
    return value in off if isinstance(off, AnyOf) else bool(value == off)


def _check_range(
    name: str,
    value: float,
    low: float,
    high: float,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number, got {value!r}.")
    if not math.isfinite(value):  # NaN passes every comparison: it trained 264 s, then failed
        raise ValueError(f"{name} must be a finite number, got {value!r}.")
    too_low = value <= low if low_open else value < low
    too_high = value >= high if high_open else value > high
    if too_low or too_high:
        lo = "(" if low_open else "["
        hi = ")" if high_open else "]"
        raise ValueError(f"{name} must be in {lo}{low}, {high}{hi}, got {value!r}.")


def _check_int(name: str, value: int, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {value!r}.")
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}, got {value!r}.")
