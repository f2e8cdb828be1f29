"""2D maps of an embedding space: UMAP (default), t-SNE or PCA, deterministic for a seed.

Every method takes ``(n, dim)`` vectors and returns ``(n, 2)`` float32 coordinates. Inputs are
L2-normalised first, so Euclidean distances rank pairs exactly as cosine similarity does. For UMAP
and t-SNE a PCA to :data:`PCA_DIMS` dimensions comes first: it keeps nearly all of the local
structure of a 384-d sentence space and makes the neighbour search several times faster.

Tiny inputs never raise: ``n == 0`` gives an empty array, ``n == 1`` the origin, and when a
method cannot work on so few points (``n <= 3`` or fewer points than it needs neighbours) PCA is
used instead (and ``n_neighbors``/perplexity shrink to fit).

UMAP compiles its numba kernels on the first call (tens of seconds). Call :func:`warm_up` at
app start (the server does, in its projecting process: ``core/projection_worker.py``) so no
user request pays for it. Most of those kernels
are not marked ``cache=True`` by umap and pynndescent, so every process compiled them again (9 s
of a core at each app start); :func:`_cache_kernels` turns numba's on-disk cache on for them, and
a start after the first loads them in 0.1 s.

A map of many points (a log dump) is fitted on a seeded sample of :data:`FIT_MAX` of them: UMAP
or t-SNE lays the sample out and each other point is placed among its nearest sampled neighbours
(in the PCA space the methods start from), weighted by nearness, so the cost past the sample
grows with one neighbour search, not with the method's epochs.

Two maps of the same points from two models land in arbitrary rotations; :func:`align` rotates,
reflects, scales and shifts one onto the other (orthogonal Procrustes) so they can be compared.

Example:
    >>> rng = np.random.default_rng(0)
    >>> project(rng.normal(size=(20, 8)), "pca").shape
    (20, 2)
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
import warnings
from typing import Literal

import numpy as np

logger = logging.getLogger(__name__)

Method = Literal["umap", "tsne", "pca"]
PROJECTIONS: tuple[str, ...] = ("umap", "tsne", "pca")
DEFAULT_METHOD: Method = "umap"
# Dimensions kept by the PCA that runs before UMAP / t-SNE.
PCA_DIMS = 50
# Below this many points UMAP / t-SNE fall back to PCA.
MIN_POINTS_NONLINEAR = 4
# Below this many points t-SNE runs single-threaded (faster than contended OpenMP threads).
SMALL_INPUT = 5000
# From this many points UMAP finds neighbours approximately (its own rule), with kernels of their
# own to compile.
APPROXIMATE_FROM = 4096
# Past this many points UMAP and t-SNE lay out a seeded sample of this many; the others are placed
# among their PLACE_NEIGHBOURS nearest sampled points (bench/sizes.py: the cost against the rows).
FIT_MAX = 20_000
PLACE_NEIGHBOURS = 10

_warm_lock = threading.Lock()
_warmed: set[str] = set()


@functools.cache  # once per process
def _cache_kernels() -> None:
    """Turn numba's on-disk cache on for every compiled function of umap and pynndescent that did
    not ask for it (what ``cache=True`` does: numba keys each entry on the function's source file
    and its timestamp, and keeps it beside the source or, where that is read-only, in the user's
    cache directory). A function numba cannot cache keeps compiling as before."""
    import sys

    from numba.core.caching import NullCache
    from numba.core.registry import CPUDispatcher

    for name, module in list(sys.modules.items()):
        if module is None or name.split(".")[0] not in ("umap", "pynndescent"):
            continue
        for item in list(vars(module).values()):
            # ``_cache``: numba's own record of whether a function caches (there is no public one)
            if isinstance(item, CPUDispatcher) and isinstance(
                getattr(item, "_cache", None), NullCache
            ):
                with contextlib.suppress(RuntimeError):  # no writable place for its cache
                    item.enable_caching()


def _as_unit(vectors: np.ndarray) -> np.ndarray:
    v = np.asarray(vectors, dtype=np.float32)
    if v.ndim != 2:
        raise ValueError(f"vectors must be a 2-d array (n, dim), got shape {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError("vectors contain NaN or infinite values")
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return np.ascontiguousarray(v / np.maximum(norms, 1e-12))


def _pca(v: np.ndarray, n_components: int, seed: int) -> np.ndarray:
    """PCA to ``n_components`` columns (zero-padded when the data has fewer dimensions)."""
    from sklearn.decomposition import PCA

    n, d = v.shape
    k = max(1, min(n_components, n, d))
    if n < 2:
        out = np.zeros((n, k), dtype=np.float32)
    else:
        # n >> d (a map's utterances against the embedding's dimensions): the d x d covariance's
        # eigenvectors, exact as the full SVD and 6x faster on 3,770 x 384 (17 s -> 2.7 s on the
        # loaded 2-core machine, where the SVD was most of a Map's first picture)
        solver = "covariance_eigh" if n >= 2 * d else "full" if n * d < 2e6 else "auto"
        out = PCA(n_components=k, random_state=seed, svd_solver=solver)
        out = out.fit_transform(v).astype(np.float32)
    if k < n_components:
        out = np.hstack([out, np.zeros((n, n_components - k), dtype=np.float32)])
    return out


def _reduce(v: np.ndarray, seed: int) -> np.ndarray:
    if v.shape[1] <= PCA_DIMS or v.shape[0] <= PCA_DIMS:
        return v
    return _pca(v, PCA_DIMS, seed)


def _umap(
    v: np.ndarray, seed: int, n_neighbors: int, *, force_approximation: bool = False
) -> np.ndarray:
    import umap

    _cache_kernels()
    n = v.shape[0]
    # UMAP's defaults are 500 epochs below 10k points and 200 above; 200 is enough at every size
    # for a picture (the layout barely moves after that) and halves the time for mid-sized data.
    model = umap.UMAP(
        n_components=2,
        n_neighbors=max(2, min(n_neighbors, n - 1)),
        metric="euclidean",
        min_dist=0.1,
        n_epochs=200 if n > 2_000 else 300,
        init="pca" if n > 10 else "random",
        random_state=seed,
        low_memory=True,
        transform_seed=seed,
        force_approximation_algorithm=force_approximation,
        verbose=False,
    )
    with warnings.catch_warnings():
        # random_state forces a single thread (that is what makes it reproducible): not news.
        warnings.filterwarnings("ignore", message=".*n_jobs.*")
        warnings.filterwarnings("ignore", message=".*k >= N.*")
        warnings.filterwarnings("ignore", category=UserWarning, module="umap")
        out = model.fit_transform(np.ascontiguousarray(_reduce(v, seed), dtype=np.float32))
    return np.asarray(out, dtype=np.float32)


def _tsne(v: np.ndarray, seed: int) -> np.ndarray:
    from sklearn.manifold import TSNE
    from threadpoolctl import threadpool_limits

    n = v.shape[0]
    perplexity = float(min(30.0, max(1.0, (n - 1) / 3.0)))
    model = TSNE(
        n_components=2,
        perplexity=perplexity,
        init="pca",
        learning_rate="auto",
        random_state=seed,
        metric="euclidean",
        n_jobs=None,
    )
    # Barnes-Hut t-SNE's OpenMP threads spin-wait: on a busy small machine they make small inputs
    # 10-50x slower than one thread. Only large inputs get the threads.
    with (
        warnings.catch_warnings(),
        threadpool_limits(limits=1 if n < SMALL_INPUT else None, user_api="openmp"),
    ):
        warnings.filterwarnings("ignore", category=FutureWarning)
        out = model.fit_transform(_reduce(v, seed))
    return np.asarray(out, dtype=np.float32)


def _fitted_on_sample(v: np.ndarray, method: str, seed: int, n_neighbors: int) -> np.ndarray:
    """UMAP or t-SNE of a seeded sample of :data:`FIT_MAX` rows of ``v``; every other row at the
    nearness-weighted mean of its :data:`PLACE_NEIGHBOURS` nearest sampled rows' places (the
    neighbours found in the PCA space both methods start from, fitted on every row)."""
    import faiss

    reduced = np.ascontiguousarray(_reduce(v, seed), dtype=np.float32)
    sample = np.sort(np.random.default_rng(seed).choice(len(v), FIT_MAX, replace=False))
    fit = reduced[sample]
    laid = _umap(fit, seed, n_neighbors) if method == "umap" else _tsne(fit, seed)
    out = np.empty((len(v), 2), dtype=np.float32)
    out[sample] = laid
    index = faiss.IndexFlatL2(fit.shape[1])
    index.add(fit)
    rest = np.setdiff1d(np.arange(len(v)), sample)
    for start in range(0, len(rest), 20_000):
        part = rest[start : start + 20_000]
        dist, near = index.search(reduced[part], PLACE_NEIGHBOURS)
        weights = 1.0 / (np.sqrt(np.maximum(dist, 0.0)) + 1e-6)
        weights /= weights.sum(axis=1, keepdims=True)
        out[part] = np.einsum("nk,nkd->nd", weights, laid[near])
    return out


def project(
    vectors: np.ndarray,
    method: str = DEFAULT_METHOD,
    *,
    seed: int = 0,
    n_neighbors: int = 15,
) -> np.ndarray:
    """Project ``(n, dim)`` vectors to ``(n, 2)`` float32 map coordinates.

    Args:
        vectors: embeddings, one row per utterance (normalised here, any scale is fine).
        method: ``"umap"``, ``"tsne"`` or ``"pca"``.
        seed: random seed; the same vectors, method and seed give the same map.
        n_neighbors: UMAP's neighbourhood size (shrunk when there are fewer points).

    Returns:
        An ``(n, 2)`` float32 array.

    Raises:
        ValueError: for an unknown method or a non-2-d / non-finite input.

    Example:
        >>> project(np.eye(3, dtype=np.float32), "umap").shape  # 3 points: PCA fallback
        (3, 2)
    """
    if method not in PROJECTIONS:
        raise ValueError(
            f"Unknown projection method {method!r}: use one of {', '.join(PROJECTIONS)}"
        )
    if n_neighbors < 2:
        raise ValueError("n_neighbors must be at least 2")
    v = _as_unit(vectors)
    n = v.shape[0]
    if n == 0:
        return np.zeros((0, 2), dtype=np.float32)
    if n == 1:
        return np.zeros((1, 2), dtype=np.float32)
    start = time.perf_counter()
    if method == "pca" or n < MIN_POINTS_NONLINEAR:
        out = _pca(v, 2, seed)
    elif n > FIT_MAX:
        out = _fitted_on_sample(v, method, seed, n_neighbors)
    elif method == "umap":
        out = _umap(v, seed, n_neighbors)
    else:
        out = _tsne(v, seed)
    out = np.ascontiguousarray(out, dtype=np.float32)
    logger.info("projected %d points with %s in %.2fs", n, method, time.perf_counter() - start)
    return out


def warm_up(*, large: bool = True) -> float:
    """Compile UMAP's numba kernels on a tiny array; returns the seconds it took.

    Below :data:`APPROXIMATE_FROM` points UMAP finds neighbours exactly; from there on, with
    random-projection trees and nearest-neighbour descent, a second set of kernels that costs
    about three times as long to compile (about 50 s of one core on a 2-core box).
    ``large=False`` compiles only the first (enough for projects that small). Thread-safe; work
    already done is not repeated.

    Args:
        large: also compile the kernels used for :data:`APPROXIMATE_FROM` points and more.

    Example:
        >>> seconds = warm_up()  # doctest: +SKIP
    """
    with _warm_lock:
        start = time.perf_counter()
        x = _as_unit(np.random.default_rng(0).normal(size=(96, 8)))
        if "small" not in _warmed:
            _umap(x, 0, 5)
            _warmed.add("small")
        if large and "large" not in _warmed:
            _umap(x, 0, 5, force_approximation=True)
            _warmed.add("large")
        seconds = time.perf_counter() - start
        if seconds > 0.5:
            logger.info("UMAP warm-up took %.1fs", seconds)
        return seconds


def align_transform(
    reference_2d: np.ndarray, other_2d: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The similarity transform ``(matrix, offset)`` with ``other @ matrix + offset ≈ reference``.

    Orthogonal Procrustes with scaling: ``matrix`` is a rotation/reflection times a scale. Fit it
    on the points two maps share, then apply it to all points of ``other``.

    Example:
        >>> m, t = align_transform(np.eye(2), np.eye(2) * 2)
        >>> bool(np.allclose(np.eye(2) * 2 @ m + t, np.eye(2)))
        True
    """
    a = np.asarray(reference_2d, dtype=np.float64)
    b = np.asarray(other_2d, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"maps must have the same (n, d) shape, got {a.shape} and {b.shape}")
    d = a.shape[1]
    if a.shape[0] == 0:
        return np.eye(d), np.zeros(d)
    mean_a, mean_b = a.mean(axis=0), b.mean(axis=0)
    a0, b0 = a - mean_a, b - mean_b
    norm_b = float(np.sum(b0**2))
    if a.shape[0] < 2 or norm_b < 1e-24:
        return np.eye(d), mean_a - mean_b
    u, s, vt = np.linalg.svd(b0.T @ a0)
    matrix = (float(s.sum()) / norm_b) * (u @ vt)
    return matrix, mean_a - mean_b @ matrix


def align(reference_2d: np.ndarray, other_2d: np.ndarray) -> np.ndarray:
    """Rotate/reflect, scale and shift ``other_2d`` onto ``reference_2d`` (orthogonal Procrustes).

    Both arrays hold the same points in the same order. The result minimises the squared distance
    between corresponding points, so a before/after pair of maps shows each point in a comparable
    place. The shape of ``other_2d`` is unchanged up to a similarity transform.

    Args:
        reference_2d: ``(n, 2)`` map to align to.
        other_2d: ``(n, 2)`` map of the same points.

    Returns:
        The aligned copy of ``other_2d`` as float32.

    Example:
        >>> a = np.array([[0, 0], [1, 0], [0, 2]], dtype=np.float32)
        >>> b = a @ np.array([[0, -1], [1, 0]], dtype=np.float32) * 3 + 5
        >>> bool(np.allclose(align(a, b), a, atol=1e-5))
        True
    """
    matrix, offset = align_transform(reference_2d, other_2d)
    b = np.asarray(other_2d, dtype=np.float64)
    return (b @ matrix + offset).astype(np.float32)
