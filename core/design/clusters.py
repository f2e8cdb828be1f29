"""Candidate intents from unlabelled utterances: density clusters, named by their words.

Vectors are L2-normalised and reduced by PCA (:data:`PCA_DIMS` dimensions, as the maps do) before
scikit-learn's ``HDBSCAN`` groups them, so Euclidean distance ranks pairs as cosine similarity
does and the neighbour search stays fast at 10k utterances. Points in no dense region are left
out (HDBSCAN's noise): a candidate intent is a group worth a name, not a partition of everything.
HDBSCAN finds groups even in scattered points, so a cluster is kept only when its members are
clearly more alike than any two utterances of the input: their mean pairwise cosine similarity
must exceed the input's by :data:`MIN_LIFT`.

A log dump is clustered whole, at any size: past :data:`SAMPLE` rows HDBSCAN groups a seeded
sample of that many (spread over the whole input, not its first rows) and every other row joins
the cluster whose centre it is nearest, when it is at least as near as the farthest of the
sampled members (:data:`JOIN_QUANTILE`; else it is left out, as HDBSCAN leaves out what lies in
no dense region). HDBSCAN's cost grows faster than the rows; the join is one product with the centres.

Clusters are listed most coherent first: by their cohesion, the mean cosine similarity of the
members to their centre (on BANKING77's 2,000 unlabelled questions the ten most coherent of 90
clusters are 98 % one intent on average, the ten biggest 61 %: a big cluster is often two or
three intents lumped together).

Each cluster is named by its distinctive words, c-TF-IDF style (a word's frequency in the cluster
against its frequency over all clusters and the left-out points, from scikit-learn's
``CountVectorizer``), and shown by its central examples (nearest its centroid). Given the labelled
pool, each cluster also gets its nearest existing intent (the project's
:class:`~core.retrieval.predictor.Predictor` applied to the cluster's centroid), and the
existing intents it *resembles*: when the Predictor, deciding as it serves (out-of-scope
thresholds included), gives at least :data:`RESEMBLES` of its utterances an existing intent, the
cluster is those intents' unlabelled utterances, not a new intent (a new intent's utterances
fall out of scope of every intent; a group of more than :data:`JUDGED` is judged on a seeded
sample of that many). Such clusters are listed after the new ones.

Example:
    >>> rng = np.random.default_rng(0)
    >>> centres = np.eye(8, dtype=np.float32)[:2]
    >>> vecs = np.repeat(centres, 15, axis=0) + rng.normal(0, 0.05, (30, 8))
    >>> texts = ["lost my card"] * 15 + ["open an account"] * 15
    >>> [c.keywords[:2] for c in find_clusters(vecs, texts)]
    [('card', 'lost'), ('account', 'open')]
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core.retrieval.knn import normalise
from core.retrieval.predictor import Predictor

logger = logging.getLogger(__name__)

MIN_UTTERANCES = 20  # fewer unlabelled utterances than this: nothing to cluster
PCA_DIMS = 50
MIN_LIFT = 0.15  # how much more alike a cluster's members must be than the input's average pair
RESEMBLES = 2 / 3  # the share of a cluster the model gives existing intents for it to be theirs
NAMED = 3  # the most intents a resembling cluster names (those giving it a fifth or more)
KEYWORDS = 5
EXAMPLES = 3
# The most rows HDBSCAN groups at once: past it, a seeded sample of this many, and the others
# join the nearest cluster's centre (bench/sizes.py measures both parts against the rows).
SAMPLE = 20_000
# A row out of the sample joins its nearest cluster when it is at least as similar to its centre
# as the farthest of the sampled members is (each measured without itself).
JOIN_QUANTILE = 0.0
# The most members of a group the model judges (whether it resembles an existing intent): a
# larger group is judged on a seeded sample of that many, its count scaled to its size.
JUDGED = 200


@dataclass(frozen=True)
class Cluster:
    """One candidate intent: rows of the input (most central first) and what names it."""

    number: int  # 1 = the most coherent
    members: tuple[int, ...]  # indices into the clustered rows, most central first
    keywords: tuple[str, ...]  # distinctive words, most distinctive first
    cohesion: float  # mean cosine similarity of the members to their centroid
    nearest_intent: str | None = None
    nearest_similarity: float = 0.0
    resembles: tuple[str, ...] = ()  # the existing intents it is (most given first); (): new
    resembling: int = 0  # how many members the model gives an existing intent

    @property
    def size(self) -> int:
        return len(self.members)

    def central(self, n: int = EXAMPLES) -> tuple[int, ...]:
        """The ``n`` members nearest the centroid."""
        return self.members[:n]

    @property
    def title(self) -> str:
        """``card · lost · new`` (``cluster 3`` when no word stands out)."""
        return " · ".join(self.keywords[:3]) or f"cluster {self.number}"

    @property
    def suggested_name(self) -> str:
        """An intent name from the two most distinctive words: ``card_lost``.

        Example:
            >>> Cluster(1, (0,), ("card", "lost"), 1.0).suggested_name
            'card_lost'
        """
        words = [re.sub(r"[^a-z0-9]+", "_", w.lower()).strip("_") for w in self.keywords[:2]]
        return "_".join(w for w in words if w) or f"candidate_{self.number}"


def default_min_size(n: int) -> int:
    """The smallest group that counts as a cluster among ``n`` utterances: 3 for a few hundred,
    growing with the square root of the pool (BANKING77's 3,080 test utterances: 8), at most 16.

    Example:
        >>> default_min_size(30), default_min_size(3080), default_min_size(10_000)
        (3, 8, 14)
    """
    return int(np.clip(round(n**0.5 / 7), 3, 16))


def _reduce(vectors: np.ndarray, seed: int) -> np.ndarray:
    v = normalise(np.asarray(vectors, dtype=np.float32))
    dims = min(PCA_DIMS, v.shape[0] - 1, v.shape[1])
    if dims >= v.shape[1] or dims < 2:
        return v
    from sklearn.decomposition import PCA

    return PCA(n_components=dims, random_state=seed).fit_transform(v).astype(np.float32)


def cluster_labels(
    vectors: np.ndarray,
    *,
    min_size: int | None = None,
    min_samples: int | None = None,
    seed: int = 0,
) -> np.ndarray:
    """The cluster of each row (``-1``: in no cluster): HDBSCAN's, of a seeded sample past
    :data:`SAMPLE` rows with the others joined to the nearest centre (:func:`_join`).

    Raises:
        ValueError: with fewer than :data:`MIN_UTTERANCES` rows.
    """
    n = len(vectors)
    if n < MIN_UTTERANCES:
        raise ValueError(
            f"Need at least {MIN_UTTERANCES} unlabelled utterances to look for candidate "
            f"intents; there are {n}. Import or add more unlabelled utterances."
        )
    if min_size and min_size < 2:
        raise ValueError(f"A cluster needs at least 2 utterances, got min_size={min_size}.")
    if n <= SAMPLE:
        return _hdbscan(vectors, min_size or default_min_size(n), min_samples, seed)
    sample = np.sort(np.random.default_rng(seed).choice(n, SAMPLE, replace=False))
    # a size asked for counts rows of the whole input: the sample holds its share of them
    size = max(2, round(min_size * SAMPLE / n)) if min_size else default_min_size(SAMPLE)
    return _join(vectors, sample, _hdbscan(vectors[sample], size, min_samples, seed))


def _join(vectors: np.ndarray, sample: np.ndarray, found: np.ndarray) -> np.ndarray:
    """Every row's cluster: the sampled rows' as ``found``; each other row the one whose centre
    is nearest, when it is at least as similar to it as its sampled members are
    (:func:`_own_floor`), else none."""
    import faiss

    labels = np.full(len(vectors), -1, dtype=np.int64)
    labels[sample] = found
    names = sorted(set(found.tolist()) - {-1})
    if not names:
        return labels
    unit = normalise(np.asarray(vectors[sample], dtype=np.float32))
    centres = np.stack([normalise(unit[found == k].mean(axis=0))[0] for k in names])
    floor = np.array([_own_floor(unit[found == k]) for k in names], dtype=np.float32)
    index = faiss.IndexFlatIP(centres.shape[1])
    index.add(np.ascontiguousarray(centres, dtype=np.float32))
    rest = np.setdiff1d(np.arange(len(vectors)), sample)
    for start in range(0, len(rest), 50_000):  # the unit copies a slice at a time
        part = rest[start : start + 50_000]
        sims, nearest = index.search(normalise(np.asarray(vectors[part], dtype=np.float32)), 1)
        near, sim = nearest[:, 0], sims[:, 0]
        joins = sim >= floor[near]
        labels[part[joins]] = np.asarray(names, dtype=np.int64)[near[joins]]
    return labels


def _own_floor(members: np.ndarray) -> float:
    """The :data:`JOIN_QUANTILE` of the members' similarities to their centre, each measured
    without itself (a member is in its own centre: it would seem nearer than a row out of the
    sample as near the group)."""
    total = members.sum(axis=0)
    dots = members @ total
    rest = np.sqrt(np.maximum(float(total @ total) - 2 * dots + 1.0, 1e-12))
    return float(np.quantile((dots - 1.0) / rest, JOIN_QUANTILE))


def _hdbscan(vectors: np.ndarray, size: int, min_samples: int | None, seed: int) -> np.ndarray:
    from sklearn.cluster import HDBSCAN

    reduced = _reduce(vectors, seed)
    model = HDBSCAN(
        min_cluster_size=size,
        min_samples=min_samples or max(2, size // 2),
        cluster_selection_method="eom",
        copy=True,
    )
    return np.asarray(model.fit_predict(reduced), dtype=np.int64)


def distinctive_words(
    texts: Sequence[str], groups: Sequence[int], *, top: int = KEYWORDS
) -> dict[int, tuple[str, ...]]:
    """c-TF-IDF keywords of each group (group ``-1``, the left-out rows, counts as one class for
    the frequencies but gets no keywords).

    A word's weight in a group is its share of the group's words times
    ``log(1 + mean words per group / the word's count over all groups)``.

    Example:
        >>> distinctive_words(["lost card", "card lost", "open account"], [0, 0, 1], top=1)
        {0: ('card',), 1: ('account',)}
    """
    from sklearn.feature_extraction.text import CountVectorizer

    names = sorted(set(groups))
    by_group: dict[int, list[str]] = {k: [] for k in names}
    for t, g in zip(texts, groups, strict=True):  # one pass: a dump has many rows and groups
        by_group[g].append(t)
    docs = [" ".join(by_group[k]) for k in names]
    try:
        counts = CountVectorizer(stop_words="english").fit(docs)
    except ValueError:  # only stop words (or nothing) in every group
        return {k: () for k in names if k >= 0}
    tf = counts.transform(docs).toarray().astype(np.float64)
    words = counts.get_feature_names_out()
    per_group = tf.sum(axis=1, keepdims=True)
    idf = np.log(1.0 + per_group.mean() / np.maximum(tf.sum(axis=0), 1.0))
    weights = tf / np.maximum(per_group, 1.0) * idf
    out: dict[int, tuple[str, ...]] = {}
    for row, k in enumerate(names):
        if k < 0:
            continue
        order = np.argsort(-weights[row], kind="stable")[:top]
        out[k] = tuple(str(words[j]) for j in order if tf[row, j] > 0)
    return out


def _mean_pair_similarity(unit: np.ndarray) -> float:
    """Mean cosine similarity of distinct pairs of unit vectors (from their mean, in O(n))."""
    m = len(unit)
    if m < 2:
        return 1.0
    total = float(np.linalg.norm(unit.sum(axis=0)) ** 2)  # sum over all (i, j), i == j included
    return (total - m) / (m * (m - 1))


def _nearest_intents(
    centroids: np.ndarray, pool: Predictor | None
) -> list[tuple[str | None, float]]:
    if pool is None or (len(pool.index) == 0 and not pool.index.anchors()):
        return [(None, 0.0)] * len(centroids)
    preds = pool.rank(centroids, show=0)
    return [(p.top, float(p.score)) for p in preds]


def _resembled(
    groups: Sequence[np.ndarray], pool: Predictor | None, sizes: Sequence[int] | None = None
) -> list[tuple[tuple[str, ...], int]]:
    """For each group of vectors: the existing intents the pool gives them (most given first,
    each a fifth or more of those, at most :data:`NAMED`) when it gives at least
    :data:`RESEMBLES` of the group one, else none; and how many it gives one. A decision of no
    intent (below the intent's out-of-scope threshold) gives none. Only a single-label pool
    with its thresholds judges: without them (out of scope off, or not calibrated yet) every
    question gets its top intent, however far, and no group is said to resemble one.
    ``sizes``: each group's size when its vectors are a sample of it (the count is scaled)."""
    usable = pool is not None and pool.head is None and not pool.multi_label and pool.thresholds
    if pool is None or not usable or not groups:
        return [((), 0)] * len(groups)
    if len(pool.index) == 0 and not pool.index.anchors():
        return [((), 0)] * len(groups)
    every = np.concatenate(groups)
    no = pool.no_intent(every)
    decided = [None if out else top for top, out in zip(pool.tops(every).intents, no, strict=True)]
    out: list[tuple[tuple[str, ...], int]] = []
    start = 0
    for group in groups:
        mine = [d for d in decided[start : start + len(group)] if d is not None]
        start += len(group)
        counts = sorted(Counter(mine).items(), key=lambda kv: (-kv[1], kv[0]))
        named = tuple(name for name, n in counts[:NAMED] if n >= len(mine) / 5)
        size = sizes[len(out)] if sizes is not None else len(group)
        given = round(len(mine) * size / max(len(group), 1))
        out.append((named if len(mine) >= RESEMBLES * len(group) else (), given))
    return out


def _judged(members: tuple[int, ...], seed: int) -> list[int]:
    """The members the pool judges: all of them, or a seeded sample of :data:`JUDGED`."""
    if len(members) <= JUDGED:
        return list(members)
    picked = np.random.default_rng(seed).choice(len(members), JUDGED, replace=False)
    return [members[i] for i in sorted(picked)]


def find_clusters(
    vectors: np.ndarray,
    texts: Sequence[str],
    *,
    pool: Predictor | None = None,
    min_size: int | None = None,
    seed: int = 0,
) -> list[Cluster]:
    """Candidate intents among ``vectors`` (one per text): the new ones first, then those that
    resemble an existing intent; each most coherent first (the biggest first among equally
    coherent ones).

    Args:
        vectors: ``(n, d)`` embeddings of the unlabelled utterances.
        texts: their texts (for the names).
        pool: the project's Predictor over its labelled pool (in the space of ``vectors``), to
            find each cluster's nearest intent as it would predict the cluster's centre, and
            the intent it resembles (see the module's docstring).
        min_size: the smallest cluster (default :func:`default_min_size`).
        seed: PCA's seed.

    Raises:
        ValueError: with fewer than :data:`MIN_UTTERANCES` utterances.
    """
    if len(vectors) != len(texts):
        raise ValueError("vectors and texts differ in length.")
    labels = cluster_labels(vectors, min_size=min_size, seed=seed)
    words = distinctive_words(texts, labels.tolist())
    unit = normalise(np.asarray(vectors, dtype=np.float32))
    average = _mean_pair_similarity(unit)
    found: list[tuple[tuple[int, ...], float, tuple[str, ...], np.ndarray]] = []
    for k in sorted(set(labels.tolist()) - {-1}):
        idx = np.flatnonzero(labels == k)
        if _mean_pair_similarity(unit[idx]) - average < MIN_LIFT:
            continue  # no tighter than chance
        centre = normalise(unit[idx].mean(axis=0))[0]
        sims = unit[idx] @ centre
        order = idx[np.argsort(-sims, kind="stable")]
        found.append((tuple(int(i) for i in order), float(sims.mean()), words.get(k, ()), centre))
    found.sort(key=lambda f: (-round(f[1], 4), -len(f[0]), f[0][0]))
    if not found:
        return []
    centres = np.asarray([f[3] for f in found], dtype=np.float32)
    nearest = _nearest_intents(centres, pool)
    judged = [unit[_judged(f[0], seed)] for f in found]
    resembled = _resembled(judged, pool, [len(f[0]) for f in found])
    ranked = sorted(  # stable: most coherent first within each
        zip(found, nearest, resembled, strict=True), key=lambda r: bool(r[2][0])
    )
    return [
        Cluster(number, members, keywords, cohesion, *near, *like)
        for number, ((members, cohesion, keywords, _), near, like) in enumerate(ranked, start=1)
    ]
