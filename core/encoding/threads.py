"""The threads torch computes on in this process (intra-op), read and set between two steps
of work: a training worker beside the app leaves a core while someone uses it
(:mod:`app.worker.cpu_share`). torch is imported when first asked."""

from __future__ import annotations


def threads() -> int:
    """The threads torch computes on now (1 at least)."""
    import torch

    return max(1, torch.get_num_threads())


def set_threads(n: int) -> None:
    """Compute on ``n`` threads from the next operation on."""
    import torch

    torch.set_num_threads(max(1, n))
