"""The row index past its switch-over size (issue 72 item 1): an IVF that finds what an exact
search finds, takes rows in and out by id, and reads back from disk as it was."""

from __future__ import annotations

import numpy as np
import pytest

from core.retrieval.row_index import RETRAIN_GROWTH, RowIndex


def _clustered(n: int, dim: int = 64, seed: int = 0) -> np.ndarray:
    """Unit vectors in 40 clusters, as sentence vectors are."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(40, dim)).astype(np.float32)
    x = centres[rng.integers(0, 40, n)] + 0.5 * rng.normal(size=(n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_past_its_switch_over_size_the_index_is_an_ivf_that_finds_what_an_exact_search_finds(
    tmp_path,
):
    x = _clustered(3000)
    ids = np.arange(3000, dtype=np.int64) * 7 + 5  # row ids are not positions
    index = RowIndex(64, switch_at=1000)
    index.add(ids[:900], x[:900])
    assert index.kind == "flat"
    index.add(ids[900:], x[900:])
    assert index.kind == "ivf" and len(index) == 3000
    queries = x[:50]
    _, found = index.search(queries, 10)
    exact = ids[np.argsort(-(x @ queries.T), axis=0)[:10].T]
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(found, exact, strict=True)])
    assert recall >= 0.9
    # rows come and go by id: removed, excluded, replaced
    gone = ids[:10].tolist()
    assert index.remove(gone) == 10 and len(index) == 2990
    assert not set(gone) & set(index.search(queries[:10], 5)[1].ravel().tolist())
    kept = int(ids[10])
    assert kept not in index.search(x[10:11], 5, exclude=[kept])[1].ravel().tolist()
    index.add([kept], -x[10:11])
    assert np.allclose(index.vectors([kept]), -x[10:11], atol=1e-6)
    # kept on disk and read back as it was, without a rebuild
    path = tmp_path / "rows.npz"
    index.save(path, {"keys": np.array(["a", "b"])})
    back, extra = RowIndex.load(path)
    assert back.kind == "ivf" and back.trained_on == index.trained_on and len(back) == 2990
    assert extra["keys"].tolist() == ["a", "b"]
    assert np.array_equal(back.search(queries, 10)[1], index.search(queries, 10)[1])


def test_an_ivf_trains_again_once_it_grew_and_a_torn_file_is_refused(tmp_path):
    x = _clustered(RETRAIN_GROWTH * 600 + 10, seed=1)
    index = RowIndex(64, switch_at=600)
    index.add(np.arange(600), x[:600])
    assert index.trained_on == 600
    index.add(np.arange(600, len(x)), x[600:])
    assert index.trained_on == len(x)
    path = tmp_path / "rows.npz"
    index.save(path)
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(ValueError):
        RowIndex.load(path)
