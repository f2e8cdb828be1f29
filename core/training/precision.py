"""Where a training step runs in bf16: a CUDA GPU that supports it, or a CPU whose matrix units
(Intel AMX or AVX512-BF16) compute bf16 natively.

On such a CPU, bf16 autocast makes the default recipe's training about 1.3x faster (BANKING77
10-shot, 100 steps on 2 cores) at the same accuracy over 3 seeds on BANKING77 and CLINC150
(bench/RESULTS.md, "Training in bf16 on the CPU's matrix units"). Where bf16 would be emulated it
would be slower: there training stays fp32. The weights stay fp32 (autocast computes in bf16
and keeps fp32 masters), so a saved version is the same kind of artifact either way.

Encoding stays fp32 everywhere: bf16 would make it about 1.5x faster, but a text's vector would
then depend on the batch it was encoded in (by up to 1e-3 per component, bf16's rounding of
differently ordered sums), and the app relies on a text encoded again giving its cached vector
(a restored deployment, a kept head, a rebuilt cache answer the same).

Example:
    >>> bf16_on("cpu") == native_bf16_cpu()
    True
"""

from __future__ import annotations

import functools

import torch


@functools.cache
def native_bf16_cpu() -> bool:
    """True when this CPU computes bf16 in hardware (AMX tiles or AVX512-BF16)."""
    checks = ("_is_amx_tile_supported", "_is_avx512_bf16_supported")
    return any(bool(getattr(torch.cpu, name, lambda: False)()) for name in checks)


def bf16_on(device: str | torch.device) -> bool:
    """Whether training on ``device`` runs under bf16 autocast: a CUDA GPU that supports bf16,
    or a CPU that computes it natively (:func:`native_bf16_cpu`)."""
    kind = torch.device(device).type
    if kind == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    return kind == "cpu" and native_bf16_cpu()
