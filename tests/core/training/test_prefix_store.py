"""The frozen layers' states kept across trainings and processes (issue 71 item 3): a training
given a store computes only the texts it lacks, a later process reads them from the folder, a
model whose frozen layers differ shares nothing, and a file that does not read is computed
again, never trusted."""

from __future__ import annotations

import copy
import logging

import numpy as np
import pytest
import torch

from core.encoding.registry import encoder_from_model, load_sentence_transformer, resolve_path
from core.training import TrainConfig, train_encoder
from core.training import prefix as prefix_module
from core.training.prefix import PrefixedEncoder
from core.training.prefix_store import PrefixStore, frozen_fingerprint, trim
from tests.samples import FIT_LABELS as LABELS
from tests.samples import FIT_TEXTS as TEXTS

CFG = TrainConfig(epochs=1, batch_size=4, seed=0, freeze_layers=3)


@pytest.fixture
def computed(monkeypatch):
    """The texts the frozen layers are run on, call by call."""
    calls: list[list[str]] = []
    real = prefix_module.prefix_states

    def counting(model, texts, layers, *args, **kwargs):
        texts = list(texts)
        calls.append(texts)
        return real(model, texts, layers, *args, **kwargs)

    monkeypatch.setattr(prefix_module, "prefix_states", counting)
    return calls


def test_a_later_process_trains_on_the_states_the_first_one_kept(
    tiny_encoder, tmp_path, computed
) -> None:
    store = PrefixStore(tmp_path)
    first = train_encoder(tiny_encoder, TEXTS, LABELS, CFG, device="cpu", prefixes=store)
    assert computed and set(computed[0]) <= set(TEXTS)
    computed.clear()
    train_encoder(tiny_encoder, TEXTS, LABELS, CFG, device="cpu", prefixes=store)
    assert computed == []  # the same process: held in memory
    assert store.save() == 1 and len(list(tmp_path.glob("*.npz"))) == 1
    assert store.save() == 0  # nothing new since
    again = train_encoder(
        tiny_encoder, TEXTS, LABELS, CFG, device="cpu", prefixes=PrefixStore(tmp_path)
    )
    assert computed == []  # another process: every text's states read from the file
    probe = ["is there a fee for this transfer", *TEXTS[:3]]
    np.testing.assert_allclose(
        again.encoder().encode(probe), first.encoder().encode(probe), atol=1e-5
    )


def test_a_measurement_adds_its_texts_and_a_model_with_other_frozen_layers_shares_none(
    tiny_encoder, tmp_path, computed
) -> None:
    model = load_sentence_transformer(resolve_path(tiny_encoder), "cpu")
    store = PrefixStore(tmp_path)
    states = store.states(model, 3)
    assert states is not None and store.states(model, 3) is states  # one per frozen part
    plain = encoder_from_model(model, tiny_encoder, "fp")
    questions = ["where is my card", "hi there"]
    np.testing.assert_allclose(
        PrefixedEncoder(plain, states).encode(questions), plain.encode(questions), atol=1e-5
    )
    assert len(states.states) == 2
    upper = copy.deepcopy(model)
    with torch.no_grad():
        upper[0].model.encoder.layer[3].output.dense.bias += 1.0  # a tuned upper layer
    assert frozen_fingerprint(upper, 3) == frozen_fingerprint(model, 3)
    lower = copy.deepcopy(model)
    with torch.no_grad():
        lower[0].model.encoder.layer[0].output.dense.bias += 1.0  # a frozen layer that moved
    assert frozen_fingerprint(lower, 3) != frozen_fingerprint(model, 3)
    other = store.states(lower, 3)
    assert other is not None and other is not states and not other.states
    assert frozen_fingerprint(model, 4) is None and store.states(model, 0) is None


def test_a_file_that_does_not_read_is_deleted_and_computed_again(
    tiny_encoder, tmp_path, caplog
) -> None:
    model = load_sentence_transformer(resolve_path(tiny_encoder), "cpu")
    key = frozen_fingerprint(model, 3)
    (tmp_path / f"{key}.npz").write_bytes(b"not an npz, a torn write")
    with caplog.at_level(logging.WARNING, logger="core.training.prefix_store"):
        states = PrefixStore(tmp_path).states(model, 3)
    assert states is not None and not states.states
    assert not (tmp_path / f"{key}.npz").exists()
    assert "not read" in caplog.text


def test_a_store_over_its_cap_keeps_the_texts_added_last(tiny_encoder, tmp_path) -> None:
    model = load_sentence_transformer(resolve_path(tiny_encoder), "cpu")
    states = PrefixStore(tmp_path).states(model, 3)
    assert states is not None
    states.fill(model, ["first text here", "second one"])
    states.fill(model, ["the last text added"])
    last = list(states.states)[-1]
    trim(states, states.states[last].numel() * 4)
    assert list(states.states) == [last]
