"""Training in bf16 where the device computes it natively (core.training.precision); the
weights a version saves stay fp32."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.training import TrainConfig, precision, train_encoder
from core.training.precision import native_bf16_cpu
from tests.samples import FIT_LABELS, FIT_TEXTS

pytestmark = pytest.mark.slow


@pytest.mark.skipif(
    not native_bf16_cpu(), reason="this CPU has no native bf16 (AMX / AVX512-BF16): fp32"
)
def test_training_runs_in_bf16_on_a_native_cpu_and_keeps_fp32_weights(monkeypatch):
    cfg = TrainConfig(epochs=1, batch_size=4, seed=7)
    bf16 = train_encoder("minilm", FIT_TEXTS, FIT_LABELS, cfg, device="cpu")
    assert bf16.stats["precision"] == "bf16"
    assert {p.dtype for p in bf16.model.parameters()} == {torch.float32}
    monkeypatch.setattr(precision, "native_bf16_cpu", lambda: False)
    fp32 = train_encoder("minilm", FIT_TEXTS, FIT_LABELS, cfg, device="cpu")
    assert fp32.stats["precision"] == "fp32"
    # the same seed and batches: only the loop's arithmetic differs, and it shows in the weights
    a = bf16.encoder().encode(FIT_TEXTS[:3])
    b = fp32.encoder().encode(FIT_TEXTS[:3])
    assert np.abs(a - b).max() > 1e-5
    assert (a * b).sum(axis=1).min() > 0.99


def test_a_cpu_without_native_bf16_trains_in_fp32(monkeypatch):
    monkeypatch.setattr(precision, "native_bf16_cpu", lambda: False)
    assert not precision.bf16_on("cpu")
    cfg = TrainConfig(epochs=1, batch_size=4)
    trained = train_encoder("minilm", FIT_TEXTS, FIT_LABELS, cfg, device="cpu")
    assert trained.stats["precision"] == "fp32"
