from __future__ import annotations

import numpy as np
import pytest

from core.encoding.cache import EmbeddingCache
from core.encoding.registry import resolve_path


def test_minilm_loads_offline_and_gives_unit_vectors(encoder):
    v = encoder.encode(["where is my card?", "hello"])
    assert v.shape == (2, 384) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert encoder.fingerprint.startswith("minilm@")


def test_single_query_path_matches_batch_path(encoder):
    one = encoder.encode(["where is my new card?"])
    batch = encoder.encode(["where is my new card?", "something else entirely"])
    np.testing.assert_allclose(one[0], batch[0], atol=1e-5)


def test_unknown_encoder_is_a_clear_error():
    with pytest.raises(ValueError, match="Unknown encoder 'nope'"):
        resolve_path("nope")


class CountingEncoder:
    """The real encoder, counting how many texts it was asked to encode."""

    def __init__(self, inner):
        self.inner = inner
        self.fingerprint = inner.fingerprint
        self.dim = inner.dim
        self.calls = 0

    def encode(self, texts, **kw):
        self.calls += len(texts)
        return self.inner.encode(texts, **kw)


def test_cache_persists_across_restarts(encoder, tmp_path):
    counting = CountingEncoder(encoder)
    texts = ["a parcel", "a refund", "a parcel"]
    first = EmbeddingCache(tmp_path).encode(counting, texts)
    assert counting.calls == 2  # the duplicate is encoded once
    again = EmbeddingCache(tmp_path).encode(counting, texts)  # a "restart": new cache object
    assert counting.calls == 2
    np.testing.assert_allclose(first, again)
    EmbeddingCache(tmp_path).encode(counting, ["a parcel", "new text"])
    assert counting.calls == 3


def test_cache_drops_a_torn_shard(encoder, tmp_path):
    counting = CountingEncoder(encoder)
    EmbeddingCache(tmp_path).encode(counting, ["x y z"])
    shard = next(tmp_path.rglob("shard-*.npz"))
    shard.write_bytes(b"not a zip")
    EmbeddingCache(tmp_path).encode(counting, ["x y z"])
    assert counting.calls == 2
