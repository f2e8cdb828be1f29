"""The compute budget: every choice that depends on the device, made in one place from the device.

A process trains and serves on one device (``INTENT_STUDIO_DEVICE``, else CUDA when torch sees a
GPU, else the CPU). What is cheap there decides:

* **serving**: a version serves in the process's torch encoder, in fp32 on a GPU; on a CPU it
  serves fp32 first and its int8 ONNX copy replaces it once the copy passed parity (an int8 copy
  is about 1.5-2x faster on 2 CPU cores; a GPU serves a batch of one in milliseconds, and the
  copy would run on the CPU beside it);
* **the int8 copy**: built by a retrain only where it would serve (a CPU), or when a bundle asks
  for one (:mod:`app.services.projects.bundles`), never on a GPU's way to serving;
* **a new project's encoder**: all-mpnet-base-v2 where a GPU trains it in seconds (it won every
  seed on BANKING77 and CLINC150 by 1.2-3.0 points, bench/RESULTS.md "mpnet against MiniLM"),
  all-MiniLM-L6-v2 on a CPU (mpnet trains about 8x and encodes about 7x as long there);
* **warm-up**: a worker on a GPU runs a few training steps when it starts (CUDA's start and its
  kernels' first use cost seconds a process), a worker on a CPU loads its encoders and runs one
  step (imports and the first forward's allocations);
* **a retrain's first pass** (an anytime retrain, issue 63): a first version serves after one
  pass over the labelled utterances, capped at :attr:`ComputeBudget.first_pass_pairs` pairs
  (about 10 s of training on a CPU that computes bf16, 25 s on one that does not; seconds on a
  GPU), then the rest trains and replaces it when it measures better
  (:meth:`ComputeBudget.first_pass`);
* **the cores a worker leaves the app**: on a CPU a worker beside the app runs at a lower
  priority and computes on one thread fewer while someone uses the app, so a key or a one-text
  prediction never waits for a retrain; on a GPU the worker's work is the GPU's;
* **what a first version's gate measures** (issue 71 item 3): on a CPU a sample of
  :attr:`ComputeBudget.gate_sample` test questions stratified by intent, compared with the
  active version question by question, so the first version's wait does not grow with the test
  split (the whole split is measured for the record once training ends); on a GPU, where it
  costs a second, the whole split;
* **the pause before an automatic retrain**: 6 s on a CPU without a label, a key in the Label
  tab or a card waited for (a key or a card shown is the designer at work: a pause, not a slow
  card, starts it; its first version continues the active one in seconds and the worker leaves
  a core to the app meanwhile), 3 s on a GPU (seconds of training, no key slowed), and how
  often the worker looks (:attr:`ComputeBudget.auto_quiet_s`);
* **the out-of-scope calibration after a retrain**: held-out on a GPU (five more trainings of the
  version's recipe, each on 4/5 of the pool: about :data:`HELD_OUT_COST` times the retrain's
  training, seconds there, after the version serves), whose thresholds flagged 4-5 % of in-scope
  questions on BANKING77 where the pool's own scores flag 10-14 % after a retrain; the quick one
  (the pool's own scores) on a CPU, where it would cost minutes. A project setting
  (``oos_calibration``) chooses either; ``auto`` takes this default
  (:meth:`ComputeBudget.calibration`).

Each choice carries its reason in words (:attr:`ComputeBudget.reasons`), which the Train tab and
the CLI show. No other module asks whether CUDA is there to decide one of these.

Example:
    >>> budget_for("cuda").new_project_encoder, budget_for("cpu").new_project_encoder
    ('mpnet', 'minilm')
    >>> budget_for("cuda").int8_copy, budget_for("cpu").int8_copy
    (False, True)
    >>> budget_for("cuda:1").device
    'cuda'
    >>> budget_for("cuda").auto_quiet_s, budget_for("cpu").auto_quiet_s
    (3.0, 6.0)
    >>> budget_for("cuda").calibration("auto"), budget_for("cpu").calibration("auto")
    ('held-out', 'quick')
    >>> from core.training import TrainConfig
    >>> budget_for("cpu").first_pass(TrainConfig(batch_size=32)).first_pass
    32
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

from app.project_settings import CALIBRATIONS

if TYPE_CHECKING:
    from core.training.config import TrainConfig

logger = logging.getLogger(__name__)

Device = Literal["cpu", "cuda"]
DEFAULT_ENCODER = "minilm"
STRONG_ENCODER = "mpnet"
ENV_DEVICE = "INTENT_STUDIO_DEVICE"
# Where an NVIDIA driver shows itself on Linux (in a container too): without one there is no CUDA.
NVIDIA_DRIVER = ("/proc/driver/nvidia/version", "/dev/nvidiactl")

# The held-out calibration trains the version's recipe once per fold on the other folds (4/5 of
# the pool): 5 x 4/5 = 4x the retrain's training (bench/RESULTS.md measured 3.6-3.8x on a CPU).
HELD_OUT_COST = 4.0

# What mpnet costs beside MiniLM, measured (bench/RESULTS.md, "mpnet against MiniLM over 3
# seeds", 2 CPU cores): training wall seconds 137-151 vs 17-19 (BANKING77 5-shot), evaluation
# 35-47 vs 5. None: not measured on that device yet.
MPNET_COST: dict[str, tuple[float | None, float | None]] = {
    "cpu": (8.0, 7.0),  # (training, encoding) x MiniLM's
    "cuda": (None, None),
}


@dataclass(frozen=True)
class ComputeBudget:
    """What a process does where, decided by its device (:func:`budget_for`).

    Attributes:
        device: ``"cpu"`` or ``"cuda"``.
        int8_copy: whether a retrain builds and checks an int8 ONNX copy of its version (it
            serves once it passed parity; the fp32 encoder serves until then).
        serves_int8: whether a version's int8 copy may serve in this process (a CPU).
        new_project_encoder: the base encoder a new project starts on.
        warm_up_steps: training steps a worker runs when it starts (0: only load encoders).
        held_out_calibration: whether a retrain calibrates out of scope on held-out encoders
            by default (the setting ``auto``), after its version serves.
        first_pass_pairs: the most (anchor, positive) pairs a retrain's first pass trains on
            before its first version is measured and serves (:meth:`first_pass`).
        gate_sample: how many test questions a checkpoint's gate measures before it serves
            (None: the whole test split).
        shares_cores: whether a training worker beside the app computes on the cores its
            requests need (a CPU): it then runs at a lower priority and leaves a core while
            someone uses the app (:mod:`app.worker.cpu_share`).
        auto_quiet_s: seconds without a label, a key or a card waited for after which the
            labels given start an automatic retrain (:mod:`app.services.training.auto_retrain`):
            on a CPU a retrain takes both cores for a while, so it waits for a pause in the
            designer's work; on a GPU it costs seconds and slows no key, so a short one will do.
        auto_poll_s: how often a worker's watcher looks for labels that call for one.
        reasons: one sentence per choice (``serving``, ``encoder``, ``calibration``), for
            people.
    """

    device: Device
    int8_copy: bool
    serves_int8: bool
    new_project_encoder: str
    warm_up_steps: int
    held_out_calibration: bool = False
    first_pass_pairs: int = 1024
    gate_sample: int | None = 1000
    shares_cores: bool = True
    auto_quiet_s: float = 6.0
    auto_poll_s: float = 2.0
    reasons: MappingProxyType[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def serving_precision(self) -> str:
        """The precision a new version serves in: ``"fp32"`` on a GPU, ``"fp32, then int8"`` on
        a CPU (its int8 copy replaces it once parity passed)."""
        return "fp32, then int8" if self.serves_int8 else "fp32"

    def calibration(self, chosen: str) -> str:
        """The out-of-scope calibration a retrain runs when a project chose ``chosen``
        (:data:`CALIBRATIONS`): ``"held-out"`` or ``"quick"``; ``auto`` is this device's."""
        if chosen not in CALIBRATIONS:
            raise ValueError(
                f"Unknown calibration {chosen!r}: use one of {', '.join(CALIBRATIONS)}."
            )
        if chosen == "auto":
            return "held-out" if self.held_out_calibration else "quick"
        return chosen

    def first_pass(self, config: TrainConfig) -> TrainConfig:
        """``config`` with its first pass capped for this device: one pass over the labelled
        utterances, at most :attr:`first_pass_pairs` pairs (a config that sets its own
        ``first_pass`` keeps it)."""
        if config.first_pass is not None:
            return config
        steps = max(1, -(-self.first_pass_pairs // config.batch_size))
        return dataclasses.replace(config, first_pass=steps)

    def mpnet_cost(self) -> tuple[float | None, float | None]:
        """(training, encoding) time of mpnet as a multiple of MiniLM's on this device; None
        where it was not measured."""
        return MPNET_COST[self.device]


def device_kind(device: str) -> Device:
    """``"cuda"`` for any CUDA device (``cuda:1``), else ``"cpu"``.

    >>> device_kind("cuda:0"), device_kind("cpu"), device_kind("mps")
    ('cuda', 'cpu', 'cpu')
    """
    return "cuda" if device.split(":", 1)[0].strip().lower() == "cuda" else "cpu"


def budget_for(device: str) -> ComputeBudget:
    """The budget of a process on ``device`` (``"cpu"``, ``"cuda"``, ``"cuda:1"``; any other
    device counts as a CPU: nothing else is measured). A pure function of the device."""
    kind = device_kind(device)
    if kind == "cuda":
        return ComputeBudget(
            device="cuda",
            int8_copy=False,
            serves_int8=False,
            new_project_encoder=STRONG_ENCODER,
            warm_up_steps=4,
            held_out_calibration=True,
            first_pass_pairs=8192,
            gate_sample=None,
            shares_cores=False,
            auto_quiet_s=3.0,
            auto_poll_s=0.5,
            reasons=MappingProxyType(
                {
                    "serving": "a version serves on the GPU in fp32 as soon as it is measured; "
                    "no int8 copy is built (it would serve on the CPU beside an idle GPU)",
                    "encoder": "mpnet (768-d) is the default on a GPU: it won every seed on "
                    "BANKING77 and CLINC150 (+1.2 to +3.0 points) and trains in seconds here",
                    "calibration": "held-out is the default on a GPU: after the version serves, "
                    f"{HELD_OUT_COST:g}x its training more (seconds here) gives thresholds that "
                    "flagged 4-5 % of in-scope questions on BANKING77 where the pool's own "
                    "scores flag 10-14 % after a retrain",
                }
            ),
        )
    return ComputeBudget(
        device="cpu",
        int8_copy=True,
        serves_int8=True,
        new_project_encoder=DEFAULT_ENCODER,
        warm_up_steps=1,
        reasons=MappingProxyType(
            {
                "serving": "a version serves in fp32 as soon as it is measured; its int8 copy "
                "(1.5-2x faster on a CPU) replaces it once it agrees with fp32 on 99 % of the "
                "test questions",
                "encoder": "MiniLM (384-d) is the default on a CPU: mpnet is 1.2-3.0 points "
                "more accurate but trains about 8x and encodes about 7x as long here",
                "calibration": "the quick calibration (the pool's own scores) is the default on a "
                f"CPU: held-out would cost about {HELD_OUT_COST:g}x a retrain's training here",
            }
        ),
    )


@functools.cache
def process_device(configured: str | None = None) -> str:
    """The device this process trains and serves on: ``configured`` (the settings' device), else
    ``INTENT_STUDIO_DEVICE``, else CUDA when torch sees a GPU, else the CPU. Torch is asked once
    per process, and only when nothing is configured."""
    chosen = configured or os.environ.get(ENV_DEVICE, "").strip()
    if chosen:
        return chosen
    if sys.modules.get("torch") is None and not any(Path(p).exists() for p in NVIDIA_DRIVER):
        return "cpu"  # no NVIDIA driver: no CUDA, and no need to import torch to know it
    from core.encoding.registry import default_device

    return default_device()


def process_budget(configured: str | None = None) -> ComputeBudget:
    """The budget of this process (:func:`budget_for` of :func:`process_device`)."""
    return budget_for(process_device(configured))


def new_project_encoder(budget: ComputeBudget | None = None) -> str:
    """The base encoder a new project starts on in this process: the budget's choice when it is
    installed (mpnet is an optional package, ``make mpnet``), else MiniLM, which always is.

    >>> new_project_encoder(budget_for("cpu"))
    'minilm'
    """
    chosen = (budget or process_budget()).new_project_encoder
    if chosen == DEFAULT_ENCODER:
        return chosen
    from core.encoding.registry import installed

    if not installed(chosen):
        logger.warning("a new project starts on %s: %s is not installed", DEFAULT_ENCODER, chosen)
        return DEFAULT_ENCODER
    return chosen
