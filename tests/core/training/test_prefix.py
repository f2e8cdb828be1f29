from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from core.encoding.registry import load_sentence_transformer, resolve_path
from core.training import TrainConfig, train_encoder
from core.training.prefix import cached_prefix
from tests.samples import FIT_LABELS as LABELS
from tests.samples import FIT_TEXTS as TEXTS

pytestmark = pytest.mark.slow


@pytest.fixture
def model():
    return load_sentence_transformer(resolve_path("minilm"), "cpu")


def test_cached_layers_give_the_same_vectors_and_the_model_comes_back_whole(model) -> None:
    texts = ["I lost my card", "what is my balance today please", "hi"]
    plain = model.encode(texts)
    stack = model[0].model.encoder.layer
    with cached_prefix(model, texts, 3) as used:
        assert used
        assert len(model[0].model.encoder.layer) == 3
        # the length-sorted, padded batch still gives each text its own vector
        cached = model.encode(texts, batch_size=3)
    np.testing.assert_allclose(cached, plain, atol=1e-5)
    assert model[0].model.encoder.layer is stack and len(stack) == 6
    np.testing.assert_allclose(model.encode(texts), plain, atol=1e-6)


def test_a_text_outside_the_cache_is_refused_not_guessed(model) -> None:
    with cached_prefix(model, ["I lost my card"], 2), pytest.raises(KeyError):
        model.encode(["a text the cache never saw"])
    assert len(model[0].model.encoder.layer) == 6


def test_nothing_frozen_or_everything_frozen_runs_uncached(model) -> None:
    for layers in (0, 6):
        with cached_prefix(model, TEXTS, layers) as used:
            assert not used
            assert len(model[0].model.encoder.layer) == 6


def test_training_with_frozen_layers_trains_only_the_upper_ones() -> None:
    base = load_sentence_transformer(resolve_path("minilm"), "cpu")
    cfg = TrainConfig(epochs=2, batch_size=4, seed=0, freeze_layers=3)
    trained = train_encoder("minilm", TEXTS, LABELS, cfg, device="cpu").model
    old = dict(base[0].model.named_parameters())
    moved = {name: not torch.equal(p, old[name]) for name, p in trained[0].model.named_parameters()}
    assert not any(v for n, v in moved.items() if "embeddings" in n or "layer.0." in n)
    assert not any(v for n, v in moved.items() if "layer.2." in n)
    assert any(v for n, v in moved.items() if "layer.3." in n)
    assert any(v for n, v in moved.items() if "layer.5." in n)
    assert len(trained[0].model.encoder.layer) == 6


def test_the_device_table_finds_each_rows_states_as_the_ids_do(model) -> None:
    """CUDA looks a batch's rows up by a hash of their ids on the device (no read-back); the
    same table built on the CPU gives exactly what the look-up by ids gives."""
    from core.training.prefix import CachedPrefix, prefix_states

    texts = ["I lost my card", "what is my balance today please", "hi", "hello there"]
    states = prefix_states(model, texts, 3)
    by_ids = CachedPrefix(states, 0)
    by_table = CachedPrefix(states, 0)
    by_table.on_device(torch.device("cpu"))
    ids = model.preprocess(texts[::-1])["input_ids"]  # padded to the longest, another order
    assert torch.equal(by_table(ids), by_ids(ids))
    assert torch.equal(by_table(ids[2:3]), by_ids(ids[2:3]))  # one row, padded further


def test_the_token_bank_gives_what_tokenising_the_batch_gives(model) -> None:
    from core.training.tokens import TokenBank

    bank = TokenBank(model, [*TEXTS, TEXTS[0]])
    batch = [TEXTS[3], TEXTS[0], TEXTS[7]]
    alone = model.preprocess(batch)
    got = bank.features(bank.rows(batch))
    assert set(got) == {k for k, v in alone.items() if isinstance(v, torch.Tensor) and v.ndim == 2}
    for name, tensor in got.items():
        assert torch.equal(tensor, alone[name])


def test_a_checkpoint_and_its_base_measured_on_the_trainings_states_encode_as_they_serve() -> None:
    """Issue 63: a retrain's checkpoint (and the base encoder it was trained from, whose frozen
    layers it shares) encodes the texts its training ran through the frozen layers on their
    cached states, and computes the others' first: the same vectors as the plain encoders give,
    the models whole again after, and the states kept for the next checkpoint."""
    from core.encoding.registry import encoder_from_model, load_encoder
    from core.training.prefix import PrefixedEncoder

    checkpoints = []
    cfg = TrainConfig(epochs=2, batch_size=4, seed=0, freeze_layers=3)
    train_encoder("minilm", TEXTS, LABELS, cfg, device="cpu", checkpoint=checkpoints.append)
    first, last = checkpoints
    assert first.prefix is last.prefix is not None and len(first.prefix.states) >= len(set(TEXTS))
    new_texts = ["is there a fee for this transfer", "hi", TEXTS[0]]
    for ck in (first, last):
        plain = ck.trained.encoder()
        fast = PrefixedEncoder(plain, ck.prefix)
        np.testing.assert_allclose(fast.encode(new_texts), plain.encode(new_texts), atol=1e-5)
        np.testing.assert_allclose(fast.encode(TEXTS), plain.encode(TEXTS), atol=1e-5)
        assert len(ck.trained.model[0].model.encoder.layer) == 6
    base = load_encoder("minilm", device="cpu")
    own = encoder_from_model(copy.deepcopy(base.model), base.name, base.fingerprint)
    np.testing.assert_allclose(
        PrefixedEncoder(own, last.prefix).encode(new_texts), base.encode(new_texts), atol=1e-5
    )
    assert "is there a fee for this transfer" in {
        first.trained.model.tokenizer.decode(list(k)[1:-1]) for k in last.prefix.states
    }


def test_one_text_measured_on_cached_states_is_encoded_by_every_layer(model) -> None:
    """An encode of one text goes through the encoder's one-text path inside the encode: the
    cached states' swap must not happen twice (it dropped the upper layers too: the vector of
    the frozen layers alone, cosine 0.30 to the right one, for a measurement with one text
    missing), for any number of texts the oneDNN swap applies to or not."""
    from core.encoding.registry import encoder_from_model
    from core.training.prefix import PrefixedEncoder, PrefixStates

    plain = encoder_from_model(model, "minilm", "fp")
    fast = PrefixedEncoder(plain, PrefixStates(3, 0))
    one = ["where is my new card"]
    np.testing.assert_allclose(fast.encode(one), plain.encode(one), atol=1e-5)
    many = [f"{one[0]} number {i}" for i in range(70)]  # past ONEDNN_FROM
    np.testing.assert_allclose(fast.encode(many), plain.encode(many), atol=1e-5)
    assert len(model[0].model.encoder.layer) == 6
