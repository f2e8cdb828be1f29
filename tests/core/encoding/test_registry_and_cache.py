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


def test_length_sorted_batches_give_each_text_its_own_vector_in_the_given_order(encoder):
    texts = [f"{'very ' * (i % 7)}long question number {i} about my card" for i in range(70)]
    seen: list[tuple[int, int]] = []
    batched = encoder.encode(texts, batch_size=16, progress=lambda d, n: seen.append((d, n)))
    one_by_one = np.concatenate([encoder.encode([t]) for t in texts[::9]])
    np.testing.assert_allclose(batched[::9], one_by_one, atol=1e-5)
    # chunks of at most batch_size (smaller when a turn would run long), progress after each
    done = [d for d, _ in seen]
    assert done == sorted(done) and done[-1] == 70 and {n for _, n in seen} == {70}
    assert all(0 < b - a <= 16 for a, b in zip([0, *done], done, strict=False))


def test_missing_names_what_encode_would_encode(encoder, tmp_path):
    cache = EmbeddingCache(tmp_path)
    cache.encode(encoder, ["a parcel"])
    assert cache.missing(encoder, ["a refund", "a parcel", "a refund", "zz"]) == ["a refund", "zz"]
    counting = CountingEncoder(encoder)
    done: list[tuple[int, int]] = []
    cache.encode(
        counting, ["a refund", "a parcel", "zz"], progress=lambda d, n: done.append((d, n))
    )
    assert counting.calls == 2 and done == [(2, 2)]
    assert cache.missing(encoder, ["a refund", "a parcel"]) == []
