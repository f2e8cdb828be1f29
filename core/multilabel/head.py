"""Multi-label intent detection on a frozen sentence encoder (Multi-ConvFiT's classifier stage).

An MLP head over precomputed (possibly contrastively specialised) sentence vectors: one hidden
layer (512, ReLU), dropout 0.4, one sigmoid output per intent, binary cross-entropy with the
paper's multi-label label smoothing, AdamW (lr 3e-3, weight decay 0.02, 10 % linear warm-up then
linear decay), batch 32. An intent is predicted when its probability is ``>= θ`` (default 0.3;
per-intent θs, which only versions trained before their tuning left the retrain carry).
Utterances with no intent are allowed: their target vector is all zeros. The head's decision is
shown beside the k-NN evidence of the labelled pool (:class:`core.retrieval.predictor.Predictor`),
so it is explained by real examples.

Saved as ``head.safetensors`` (weights) + ``head.json`` (config, intents, thresholds); no pickle.

Example:
    >>> vecs = np.eye(4, dtype=np.float32)
    >>> head = MultiLabelHead(HeadConfig(epochs=50)).fit(vecs, [("a",), ("b",), ("a", "b"), ()])
    >>> head.intents
    ('a', 'b')
    >>> head.predict_proba(vecs).shape
    (4, 2)
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.encoding.exit_gate import NATIVE
from core.multilabel.targets import binary_targets, intents_of, smooth_targets
from core.multilabel.thresholds import (
    DEFAULT_THRESHOLD,
    ThresholdLike,
    Thresholds,
    as_thresholds,
    decide,
    validate_threshold,
)

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
WEIGHTS_FILE = "head.safetensors"
META_FILE = "head.json"
# The head's folder inside a model version or a bundle.
HEAD_DIR = "head"

LabelSets = Sequence[Sequence[str]]
Progress = Callable[[int, int], None]


class Cancelled(RuntimeError):
    """Raised by :meth:`MultiLabelHead.fit` when ``should_cancel()`` returns True."""


@dataclass(frozen=True)
class HeadConfig:
    """Hyper-parameters of the multi-label MLP head (defaults: Multi-ConvFiT + a step cap).

    CPU default: the paper's 600 epochs, but at most ``max_steps`` = 6,000 optimiser steps. Vectors
    are precomputed, so a step is a tiny MLP update (about 1-3 ms on one CPU core). In the low-data
    regime (~200 NLU++ examples, 7 steps/epoch) the cap never binds and 600 epochs scored 1-2 F1
    points above 100-200; in the high-data regime (~1,900 examples, 59 steps/epoch) 600 epochs would
    be 35,000 steps while ~100 epochs scored the same as 200 (``bench/multilabel.py``, fold 0).
    The cap bounds head training at seconds, which also matters for k-fold threshold tuning.

    Args:
        hidden: hidden layer width.
        dropout: dropout before the output layer, in [0, 1).
        lr: AdamW learning rate.
        weight_decay: AdamW weight decay.
        warmup_ratio: fraction of steps with linear warm-up (then linear decay to 0).
        epochs: passes over the training vectors.
        max_steps: cap on optimiser steps (epochs are cut to fit); None = no cap.
        batch_size: examples per step.
        label_smoothing: ``ls`` in (0, 1]; positive target ``ls``, negative ``(1 - ls)·M/|C|``;
            1.0 turns smoothing off.
        threshold: the global decision θ, strictly inside (0, 1).
        seed: seeds initialisation, dropout and shuffling.

    Example:
        >>> HeadConfig.from_dict(HeadConfig(epochs=10).to_dict()).epochs
        10
    """

    hidden: int = 512
    dropout: float = 0.4
    lr: float = 3e-3
    weight_decay: float = 0.02
    warmup_ratio: float = 0.1
    epochs: int = 600
    max_steps: int | None = 6000
    batch_size: int = 32
    label_smoothing: float = 0.95
    threshold: float = DEFAULT_THRESHOLD
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("hidden", "epochs", "batch_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.max_steps is not None and (
            not isinstance(self.max_steps, int)
            or isinstance(self.max_steps, bool)
            or self.max_steps < 1
        ):
            raise ValueError(
                f"max_steps must be a positive integer or None, got {self.max_steps!r}"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout!r}")
        if not self.lr > 0.0:
            raise ValueError(f"lr must be positive, got {self.lr!r}")
        if self.weight_decay < 0.0:
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay!r}")
        if not 0.0 <= self.warmup_ratio < 1.0:
            raise ValueError(f"warmup_ratio must be in [0, 1), got {self.warmup_ratio!r}")
        if not 0.0 < self.label_smoothing <= 1.0:
            raise ValueError(
                f"label_smoothing must be in (0, 1] (1.0 = off), got {self.label_smoothing!r}"
            )
        validate_threshold(self.threshold)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HeadConfig:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown HeadConfig keys: {sorted(unknown)}")
        return cls(**dict(data))


def _as_vectors(vectors: np.ndarray) -> np.ndarray:
    v = np.ascontiguousarray(vectors, dtype=np.float32)
    if v.ndim != 2:
        raise ValueError(f"vectors must be a 2-D (n, dim) array, got shape {v.shape}")
    return v


def _build_mlp(dim: int, n_out: int, config: HeadConfig) -> torch.nn.Sequential:
    from torch import nn

    return nn.Sequential(
        nn.Linear(dim, config.hidden),
        nn.ReLU(),
        nn.Dropout(config.dropout),
        nn.Linear(config.hidden, n_out),
    )


class MultiLabelHead:
    """An MLP with sigmoid outputs over frozen sentence vectors.

    Example:
        >>> head = MultiLabelHead(HeadConfig(epochs=5))  # then .fit(vectors, label_sets)
        >>> head.config.threshold
        0.3
    """

    def __init__(self, config: HeadConfig | None = None) -> None:
        self.config = config or HeadConfig()
        self.intents: tuple[str, ...] = ()
        self.dim = 0
        self.thresholds = Thresholds(self.config.threshold)
        self._model: torch.nn.Sequential | None = None

    @property
    def fitted(self) -> bool:
        return self._model is not None

    def fit(
        self,
        vectors: np.ndarray,
        label_sets: LabelSets,
        intents: Sequence[str] | None = None,
        *,
        progress: Progress | None = None,
        should_cancel: Callable[[], bool] | None = None,
    ) -> MultiLabelHead:
        """Train on ``(n, dim)`` vectors and their label sets (empty tuple = no intent).

        Args:
            vectors: precomputed sentence vectors.
            label_sets: one sequence of intent names per vector.
            intents: output columns (default: sorted union of ``label_sets``); may include intents
                without examples.
            progress: called as ``progress(epoch, epochs)`` after each epoch.
            should_cancel: polled each epoch; returning True raises :class:`Cancelled`.

        Returns:
            ``self``, fitted.
        """
        import torch

        x = _as_vectors(vectors)
        if len(x) != len(label_sets):
            raise ValueError(f"{len(x)} vectors but {len(label_sets)} label sets")
        if len(x) == 0:
            raise ValueError("cannot fit a head on zero examples")
        names = tuple(intents) if intents is not None else intents_of(label_sets)
        if not names:
            raise ValueError("no intents to learn: every example has an empty label set")
        y = smooth_targets(binary_targets(label_sets, names), self.config.label_smoothing)
        cfg = self.config
        epochs = self.epochs_for(len(x))
        total = math.ceil(len(x) / cfg.batch_size) * epochs
        warmup = int(cfg.warmup_ratio * total)

        def schedule(step: int) -> float:
            if step < warmup:
                return (step + 1) / max(1, warmup)
            return max(0.0, (total - step) / max(1, total - warmup))

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.seed)
            model = _build_mlp(x.shape[1], len(names), cfg)
            opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
            sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
            loss_fn = torch.nn.BCEWithLogitsLoss()
            gen = torch.Generator().manual_seed(cfg.seed)
            xt, yt = torch.from_numpy(x), torch.from_numpy(y)
            model.train()
            last_loss = float("nan")
            for epoch in range(epochs):
                if should_cancel is not None and should_cancel():
                    raise Cancelled("head training cancelled")
                with NATIVE.running():  # an exit waits for the epoch (core.encoding.exit_gate)
                    order = torch.randperm(len(xt), generator=gen)
                    for start in range(0, len(xt), cfg.batch_size):
                        idx = order[start : start + cfg.batch_size]
                        opt.zero_grad(set_to_none=True)
                        loss = loss_fn(model(xt[idx]), yt[idx])
                        loss.backward()
                        opt.step()
                        sched.step()
                    last_loss = float(loss.detach())
                if progress is not None:
                    progress(epoch + 1, epochs)
            model.eval()
        logger.info(
            "fitted multi-label head: %d examples, %d intents, %d epochs, final loss %.4f",
            len(x),
            len(names),
            epochs,
            last_loss,
        )
        self._model = model
        self.intents = names
        self.dim = int(x.shape[1])
        return self

    def epochs_for(self, n_examples: int) -> int:
        """Epochs actually run on ``n_examples``: ``config.epochs`` cut to fit ``max_steps``."""
        cfg = self.config
        if cfg.max_steps is None:
            return cfg.epochs
        steps_per_epoch = max(1, math.ceil(n_examples / cfg.batch_size))
        return max(1, min(cfg.epochs, cfg.max_steps // steps_per_epoch))

    def _require_fitted(self) -> torch.nn.Sequential:
        if self._model is None:
            raise RuntimeError("the head is not fitted: call fit() or load_head() first")
        return self._model

    def predict_proba(self, vectors: np.ndarray) -> np.ndarray:
        """``(n, C)`` float32 sigmoid probabilities, columns in ``self.intents`` order."""
        import torch

        model = self._require_fitted()
        x = _as_vectors(vectors)
        if x.shape[1] != self.dim:
            raise ValueError(f"vectors have dim {x.shape[1]}, the head expects {self.dim}")
        if len(x) == 0:
            return np.zeros((0, len(self.intents)), dtype=np.float32)
        with NATIVE.running(), torch.inference_mode():
            logits = model(torch.from_numpy(x))
            return torch.sigmoid(logits).numpy().astype(np.float32)

    def predict(
        self, vectors: np.ndarray, thresholds: ThresholdLike = None
    ) -> list[tuple[str, ...]]:
        """Label sets: every intent whose probability is ``>= θ`` (sorted by name).

        Args:
            vectors: ``(n, dim)`` vectors.
            thresholds: a float, an ``{intent: θ}`` mapping (others use the head's global θ),
                :class:`~core.multilabel.thresholds.Thresholds`, or None for the head's own ``thresholds``.
        """
        proba = self.predict_proba(vectors)
        return decide(proba, self.intents, self._resolve(thresholds))

    def _resolve(self, thresholds: ThresholdLike) -> Thresholds:
        if thresholds is None:
            return self.thresholds
        return as_thresholds(thresholds, self.thresholds.global_threshold)

    def save(self, directory: str | Path) -> Path:
        """Write ``head.safetensors`` and ``head.json`` into ``directory`` (created if needed)."""
        from safetensors.torch import save_file

        model = self._require_fitted()
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        tensors = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
        save_file(tensors, str(out / WEIGHTS_FILE))
        meta = {
            "format_version": FORMAT_VERSION,
            "kind": "multilabel_mlp",
            "config": self.config.to_dict(),
            "intents": list(self.intents),
            "dim": self.dim,
            "thresholds": self.thresholds.to_dict(),
        }
        tmp = out / (META_FILE + ".tmp")
        tmp.write_text(json.dumps(meta, indent=2), encoding="utf-8")
        tmp.replace(out / META_FILE)
        return out


def load_head(directory: str | Path) -> MultiLabelHead:
    """Load a head written by :meth:`MultiLabelHead.save`.

    Example:
        >>> head = load_head("bundle/head")  # doctest: +SKIP
    """
    from safetensors.torch import load_file

    src = Path(directory)
    meta_path, weights_path = src / META_FILE, src / WEIGHTS_FILE
    if not meta_path.exists() or not weights_path.exists():
        raise FileNotFoundError(f"{src} has no {META_FILE} + {WEIGHTS_FILE}")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    if meta.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"unsupported head format version {meta.get('format_version')!r}")
    head = MultiLabelHead(HeadConfig.from_dict(meta["config"]))
    head.intents = tuple(meta["intents"])
    head.dim = int(meta["dim"])
    head.thresholds = Thresholds.from_dict(meta["thresholds"])
    model = _build_mlp(head.dim, len(head.intents), head.config)
    model.load_state_dict(load_file(str(weights_path)))
    model.eval()
    head._model = model
    return head
