"""Warm a process for training before its first job: the base encoder read and kept (the
process-wide one of :func:`core.encoding.registry.load_encoder`, which training copies), and a
few real training steps run on made-up utterances through :func:`train_encoder` itself, so the
libraries' first-use costs (CUDA's context, cuBLAS, the bf16 autocast kernels and attention
kernels for a few padded widths; on a CPU the allocator and oneDNN's primitives) are paid here
and not in the first job. The trained result is thrown away.

Example:
    >>> seconds = warm_up("minilm", device="cpu", steps=1)  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from core.training.config import TrainConfig
from core.training.fit import train_encoder

logger = logging.getLogger(__name__)

# Made-up utterances of a few lengths (the loop pads each chunk to its longest: different widths
# warm different kernels). Two per intent, so each intent gives a positive pair.
_WORDS = [
    "please",
    "help",
    "me",
    "with",
    "my",
    "card",
    "account",
    "order",
    "payment",
    "transfer",
    "refund",
]


def warm_texts(steps: int, batch_size: int = 4) -> tuple[list[str], list[tuple[str, ...]]]:
    """Utterances and labels that make :func:`train_encoder` take about ``steps`` steps of
    ``batch_size`` pairs, of several lengths.

    >>> texts, labels = warm_texts(2)
    >>> len(texts), len(set(labels)), len({len(t.split()) for t in texts}) > 3
    (8, 4, True)
    """
    intents = max(2, steps * batch_size // 2)  # each utterance anchors one pair
    texts: list[str] = []
    labels: list[tuple[str, ...]] = []
    for i in range(intents):
        for j in range(2):
            length = 2 + (i * 3 + j * 5) % 14
            words = [_WORDS[(i + j + k) % len(_WORDS)] for k in range(length)]
            texts.append(f"{' '.join(words)} {i}")
            labels.append((f"intent_{i}",))
    return texts, labels


def warm_up(
    base: str,
    *,
    device: str | None = None,
    steps: int = 1,
    should_cancel: Callable[[], bool] | None = None,
) -> float:
    """Load ``base`` (kept for the process) and run ``steps`` training steps on it (0: only
    load it); returns the seconds taken. Nothing is kept of the steps. ``should_cancel``: polled
    before the steps and before each (True raises :class:`core.training.TrainingCancelled`)."""
    from core.encoding.exit_gate import NATIVE
    from core.encoding.registry import load_encoder

    started = time.monotonic()
    with NATIVE.running():  # a process's exit waits for the load (core.encoding.exit_gate)
        encoder = load_encoder(base, device=device)
    encoder.encode(["warming up", "a second, longer utterance to encode"])
    if steps > 0:
        texts, labels = warm_texts(steps)
        train_encoder(
            base,
            texts,
            labels,
            TrainConfig(epochs=1, batch_size=4, seed=0),
            device=device,
            should_cancel=should_cancel,
        )
    seconds = time.monotonic() - started
    logger.info("warmed %s on %s (%d step(s)) in %.1f s", base, encoder.device, steps, seconds)
    return seconds
