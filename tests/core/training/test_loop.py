"""The training loop's CUDA attention choice (the flags are global, so this runs on any torch)."""

from __future__ import annotations

import torch

from core.training.loop import _attention_kernels


def test_cuda_training_attention_leaves_out_cudnn_and_restores_the_flags() -> None:
    before = torch.backends.cuda.cudnn_sdp_enabled()
    with _attention_kernels(cuda=True):
        assert not torch.backends.cuda.cudnn_sdp_enabled()
        assert torch.backends.cuda.flash_sdp_enabled()
        assert torch.backends.cuda.mem_efficient_sdp_enabled()
        assert torch.backends.cuda.math_sdp_enabled()
    assert torch.backends.cuda.cudnn_sdp_enabled() == before
    with _attention_kernels(cuda=False):  # the CPU run leaves them as they are
        assert torch.backends.cuda.cudnn_sdp_enabled() == before
