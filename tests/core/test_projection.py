from __future__ import annotations

import numpy as np
import pytest

from core.projection import PROJECTIONS, align, align_transform, project, warm_up


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    """UMAP's numba compilation (tens of seconds, once per process) outside the timed tests."""
    warm_up(large=False)


def _clusters(
    n_per: int = 20, k: int = 3, dim: int = 16, seed: int = 0
) -> tuple[np.ndarray, list[int]]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, dim)) * 4
    x = np.concatenate([c + rng.normal(scale=0.3, size=(n_per, dim)) for c in centres])
    return x.astype(np.float32), [i for i in range(k) for _ in range(n_per)]


def test_unknown_method_raises() -> None:
    with pytest.raises(ValueError, match="Unknown projection method 'mds'"):
        project(np.zeros((5, 3)), "mds")


def test_bad_input_raises() -> None:
    with pytest.raises(ValueError, match="2-d array"):
        project(np.zeros(5), "pca")
    with pytest.raises(ValueError, match="NaN"):
        project(np.full((5, 3), np.nan), "pca")


@pytest.mark.parametrize("method", PROJECTIONS)
@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 7])
def test_tiny_inputs_give_finite_maps(method: str, n: int) -> None:
    x = np.random.default_rng(n).normal(size=(n, 384)).astype(np.float32)
    out = project(x, method, n_neighbors=15)
    assert out.shape == (n, 2)
    assert out.dtype == np.float32
    assert np.isfinite(out).all()


@pytest.mark.parametrize("method", PROJECTIONS)
def test_deterministic_for_a_seed(method: str) -> None:
    x, _ = _clusters()
    a = project(x, method, seed=3)
    b = project(x, method, seed=3)
    np.testing.assert_array_equal(a, b)


def test_umap_keeps_clusters_apart() -> None:
    from sklearn.metrics import silhouette_score

    x, y = _clusters(n_per=25, k=3, dim=64)
    out = project(x, "umap", seed=0, n_neighbors=10)
    assert silhouette_score(out, y) > 0.5


@pytest.mark.parametrize("method", ["umap", "tsne"])
def test_past_fit_max_the_method_lays_out_a_sample_and_places_the_others_among_it(
    monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    """A map of a log dump (issue 72 item 4), with the size lowered as a test can: past
    ``FIT_MAX`` points UMAP or t-SNE is given a seeded sample of that many, and every other point
    lands among its own cluster's (the clusters as far apart as on the sample), the same for
    the same seed."""
    from sklearn.metrics import silhouette_score

    from core import projection

    given: list[int] = []
    for name in ("_umap", "_tsne"):
        real = getattr(projection, name)
        monkeypatch.setattr(
            projection,
            name,
            lambda v, *a, _real=real, **k: given.append(len(v)) or _real(v, *a, **k),
        )
    monkeypatch.setattr(projection, "FIT_MAX", 60, raising=False)
    x, y = _clusters(n_per=100, k=3, dim=64)
    out = project(x, method, seed=0, n_neighbors=10)
    assert given == [60]  # the method laid out the sample alone
    assert out.shape == (300, 2) and np.isfinite(out).all()
    assert silhouette_score(out, y) > 0.5  # the placed points among their own cluster's
    np.testing.assert_array_equal(out, project(x, method, seed=0, n_neighbors=10))


def test_warm_up_does_not_repeat_work() -> None:
    assert warm_up(large=False) < 0.5


def test_align_recovers_a_similarity_transform() -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(size=(30, 2)).astype(np.float32)
    theta = 1.1
    rot = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
    flip = np.array([[1.0, 0.0], [0.0, -1.0]])
    b = (a @ rot @ flip * 2.5 + np.array([4.0, -1.0])).astype(np.float32)
    np.testing.assert_allclose(align(a, b), a, atol=1e-4)
    matrix, offset = align_transform(a, b)
    np.testing.assert_allclose(b @ matrix + offset, a, atol=1e-4)


def test_align_degenerate_and_mismatched() -> None:
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    same = np.ones((2, 2))
    assert np.isfinite(align(a, same)).all()
    assert align(np.zeros((0, 2)), np.zeros((0, 2))).shape == (0, 2)
    with pytest.raises(ValueError, match="same"):
        align(a, np.ones((3, 2)))


HITS = """
import sys
from core.projection import warm_up
warm_up(large=False)
hits = misses = 0
for name, module in list(sys.modules.items()):
    if name.split(".")[0] == "umap" and module is not None:
        for item in vars(module).values():
            stats = getattr(item, "stats", None)
            if stats is not None and hasattr(stats, "cache_hits"):
                hits += sum(stats.cache_hits.values())
                misses += sum(stats.cache_misses.values())
print(hits, misses)
"""


def test_a_second_process_loads_umaps_kernels_from_numbas_cache() -> None:
    """umap marks few of its kernels ``cache=True``: each app start compiled the others again
    (about 9 s of a core). After one process has drawn a map, the next compiles none of them."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    def run() -> tuple[int, int]:
        out = subprocess.run([sys.executable, "-c", HITS], cwd=ROOT, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr[-2000:]
        hits, misses = out.stdout.split()
        return int(hits), int(misses)

    run()  # compiles and writes whatever an earlier run has not
    hits, misses = run()
    # most kernels are read back (without the cache: 1 of 11; a few tiny helpers that numba
    # inlines into their callers still count as compiled)
    assert hits > misses
