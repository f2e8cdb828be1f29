"""oneDNN's linear layers for a retrain's bulk inference where this CPU runs them faster: the
same vectors, the model's own layers back afterwards (errors included), and only where the
device's probe says so."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from core.encoding import onednn
from core.encoding.onednn import onednn_linears

pytestmark = pytest.mark.skipif(
    not torch.backends.mkldnn.is_available(), reason="this torch has no oneDNN"
)


def test_the_swapped_layers_give_the_same_vectors_and_the_models_own_come_back(
    tiny_encoder,
) -> None:
    from core.encoding.registry import load_sentence_transformer, resolve_path

    model = load_sentence_transformer(resolve_path(tiny_encoder), "cpu")
    texts = ["I lost my card", "what is my balance today please", "hi"]
    plain = model.encode(texts)
    linears = [m for m in model.modules() if type(m) is nn.Linear]
    seen: list[str] = []
    with onednn_linears(model, always=True):
        seen = [type(m).__name__ for m in model.modules() if "Linear" in type(m).__name__]
        swapped = model.encode(texts)
    assert seen and set(seen) == {"MkldnnLinear"}
    np.testing.assert_allclose(swapped, plain, atol=1e-5)
    assert [m for m in model.modules() if type(m) is nn.Linear] == linears
    with pytest.raises(RuntimeError), onednn_linears(model, always=True):
        raise RuntimeError("an encoding that failed")
    assert [m for m in model.modules() if type(m) is nn.Linear] == linears


def test_only_a_cpu_float32_model_on_a_cpu_the_probe_favours_is_swapped(monkeypatch) -> None:
    model = nn.Sequential(nn.Linear(4, 3))
    inside: list[str] = []
    probe = onednn.faster_here.__wrapped__  # the probe itself, uncached

    def types() -> None:
        inside.append(type(model[0]).__name__)

    monkeypatch.setattr(onednn, "faster_here", lambda: False)
    with onednn_linears(model):
        types()
    monkeypatch.setattr(onednn, "faster_here", lambda: True)
    with onednn_linears(model):
        types()
    with onednn_linears(model.to(torch.float64)):
        types()
    assert inside == ["Linear", "MkldnnLinear", "Linear"]
    assert isinstance(probe(), bool)  # the probe runs on this CPU, whatever it says
