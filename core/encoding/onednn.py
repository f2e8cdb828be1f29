"""oneDNN's linear layers for an fp32 model's bulk inference, where this CPU runs them faster.

On an AMD EPYC (AVX-512 BF16) torch's fp32 linear layers, MKL's sgemm, run at about half the
speed of onnxruntime's on the encoder's shapes, and the same layers through oneDNN
(``torch.utils.mkldnn.MkldnnLinear``) 1.5-1.7x faster than MKL's, with vectors equal to a cosine
of 0.9999997 (bench/RESULTS.md); on other CPUs the two may be even. So the choice is the
device's: :func:`faster_here` times one of the encoder's products both ways once per process,
and :func:`onednn_linears` swaps a model's ``nn.Linear`` layers for oneDNN's only where it
says so, only for a model on the CPU in float32, for as long as one bulk encoding takes (the
swap costs ~45 ms for MiniLM: not for one text). ``MkldnnLinear`` computes no gradients: only a
model no other thread uses meanwhile, outside training, may be swapped (a retrain's measurement,
its frozen layers' states).

Example:
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Linear(4, 3))
    >>> with torch.no_grad(), onednn_linears(model, always=True):
    ...     y = model(torch.ones(2, 4))
    >>> type(model[0]).__name__, tuple(y.shape)
    ('Linear', (2, 3))
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn

logger = logging.getLogger(__name__)

# oneDNN is used where it takes at most this share of MKL's time on the probe's product.
FASTER = 0.8


def _best(fn: object, x: torch.Tensor, repeats: int = 8) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        fn(x)  # type: ignore[operator]
        best = min(best, time.perf_counter() - started)
    return best


@functools.cache
def faster_here() -> bool:
    """Whether oneDNN's linear layer beats MKL's on this CPU, on a product of the encoder's
    shape (a batch of 64 utterances of 20 tokens, 384 -> 1,536): timed once per process (~0.1
    s), on the threads torch computes on now."""
    if not torch.backends.mkldnn.is_available():
        return False
    from torch.utils.mkldnn import MkldnnLinear

    with torch.no_grad():
        dense = nn.Linear(384, 1536)
        onednn = MkldnnLinear(dense, torch.float32)
        x = torch.randn(64, 20, 384)
        dense(x), onednn(x)  # warm both
        mkl_s, onednn_s = _best(dense, x), _best(onednn, x)
    faster = onednn_s <= FASTER * mkl_s
    logger.info(
        "fp32 linear layers: oneDNN %.1f ms, MKL %.1f ms on this CPU: %s",
        1000 * onednn_s,
        1000 * mkl_s,
        "oneDNN measures" if faster else "MKL measures",
    )
    return faster


def applies(model: nn.Module) -> bool:
    """Whether :func:`onednn_linears` would swap ``model``'s layers here: on the CPU, in float32,
    where :func:`faster_here`."""
    param = next(model.parameters(), None)
    if param is None or param.device.type != "cpu" or param.dtype != torch.float32:
        return False
    return faster_here()


@contextmanager
def onednn_linears(model: nn.Module, *, always: bool = False) -> Iterator[None]:
    """While inside, every ``nn.Linear`` of ``model`` computes through oneDNN, where
    :func:`applies` (``always``: whatever the probe says; a test's); the model's own layers are
    back on the way out, errors included."""
    if not always and not applies(model):
        yield
        return
    from torch.utils.mkldnn import MkldnnLinear

    swapped: list[tuple[nn.Module, str, nn.Module]] = []
    try:
        with torch.no_grad():
            for parent in list(model.modules()):
                for name, child in list(parent.named_children()):
                    if type(child) is nn.Linear:
                        setattr(parent, name, MkldnnLinear(child, torch.float32))
                        swapped.append((parent, name, child))
        yield
    finally:
        for parent, name, child in swapped:
            setattr(parent, name, child)
