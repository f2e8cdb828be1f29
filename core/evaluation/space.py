"""Numbers that say how well an embedding space separates intents (shown beside the maps).

- ``silhouette``: mean silhouette coefficient with cosine distance over labelled points, in
  [-1, 1], higher is better (ConvFiT reports 0.07 → 0.70 on BANKING77).
- ``alignment``: Wang & Isola's alignment, ``E ‖x − y‖²`` over positive pairs (two utterances
  of the same intent) on unit vectors, in [0, 4], lower is better.
- ``uniformity``: Wang & Isola's uniformity, ``log E exp(−2‖x − y‖²)`` over all pairs of distinct
  points on unit vectors, in [−8, 0], lower (more spread out) is better.

Labels: each point's label is a string, a sequence of strings (multi-label) or ``None``.
Unlabelled points (``None``, ``""`` or an empty sequence) are **skipped** for silhouette and
alignment but count for uniformity, which needs no labels. A multi-label point uses its **first**
label as given (pass labels sorted if you want that order to be alphabetical).

Large inputs are sub-sampled with a fixed seed so the numbers are reproducible: silhouette over at
most ``max_points`` points, uniformity over at most ``max_points`` points (all pairs among them),
alignment over at most ``max_pairs`` positive pairs. A metric that cannot be computed (e.g. one
intent only) is ``nan``.

Example:
    >>> v = np.array([[1, 0], [0.99, 0.1], [0, 1], [0.1, 0.99]], dtype=np.float32)
    >>> m = space_metrics(v, ["a", "a", "b", "b"])
    >>> m["silhouette"] > 0.8
    True
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

PRIMARY_METRIC = "silhouette"
Label = str | Sequence[str] | None


def first_label(label: Label) -> str | None:
    """The label a point is scored under: the first of a multi-label set, ``None`` if unlabelled.

    Example:
        >>> first_label(["card_arrival", "card_linking"]), first_label(()), first_label("x")
        ('card_arrival', None, 'x')
    """
    if label is None:
        return None
    if isinstance(label, str):
        return label or None
    for name in label:
        if name:
            return str(name)
    return None


def _unit(vectors: np.ndarray) -> np.ndarray:
    v = np.asarray(vectors, dtype=np.float64)
    if v.ndim != 2:
        raise ValueError(f"vectors must be a 2-d array (n, dim), got shape {v.shape}")
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


def silhouette(
    vectors: np.ndarray, labels: Sequence[Label], *, max_points: int = 4000, seed: int = 0
) -> float:
    """Mean cosine silhouette over labelled points (``nan`` with fewer than 2 intents).

    Example:
        >>> silhouette(np.eye(4), ["a", "a", "b", "b"]) < 0.1
        True
    """
    from sklearn.metrics import silhouette_score

    v = _unit(vectors)
    names = [first_label(lab) for lab in labels]
    keep = np.array([i for i, name in enumerate(names) if name is not None], dtype=np.int64)
    if len(keep) < 3:
        return math.nan
    y = np.array([names[i] for i in keep])
    n_classes = len(set(y.tolist()))
    if n_classes < 2 or n_classes > len(keep) - 1:
        return math.nan
    sample = min(max_points, len(keep)) if len(keep) > max_points else None
    if sample is not None:
        # silhouette_score's own sampling may draw a single class; draw until two are present.
        rng = np.random.default_rng(seed)
        for _ in range(10):
            idx = rng.choice(len(keep), size=sample, replace=False)
            if len(set(y[idx].tolist())) >= 2:
                break
        return float(silhouette_score(v[keep][idx], y[idx], metric="cosine"))
    return float(silhouette_score(v[keep], y, metric="cosine"))


def alignment(
    vectors: np.ndarray,
    labels: Sequence[Label],
    *,
    max_pairs: int = 200_000,
    seed: int = 0,
) -> float:
    """Wang & Isola alignment ``E ‖x − y‖²`` over same-intent pairs (``nan`` if none exist).

    All positive pairs are used when there are at most ``max_pairs``; otherwise ``max_pairs``
    are drawn uniformly (with replacement) with a fixed seed.

    Example:
        >>> alignment(np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]), ["a", "a", "b"])
        0.0
    """
    v = _unit(vectors)
    groups: dict[str, list[int]] = {}
    for i, lab in enumerate(labels):
        name = first_label(lab)
        if name is not None:
            groups.setdefault(name, []).append(i)
    members = [np.asarray(g, dtype=np.int64) for g in groups.values() if len(g) >= 2]
    if not members:
        return math.nan
    sizes = np.array([len(g) for g in members], dtype=np.float64)
    pair_counts = sizes * (sizes - 1) / 2
    total = float(pair_counts.sum())
    if total <= max_pairs:
        sums = 0.0
        for g in members:
            x = v[g]
            gram = x @ x.T
            # ‖x − y‖² = 2 − 2 cos for unit vectors; upper triangle = each pair once.
            iu = np.triu_indices(len(g), k=1)
            sums += float(np.sum(np.clip(2.0 - 2.0 * gram[iu], 0.0, 4.0)))
        return sums / total
    rng = np.random.default_rng(seed)
    which = rng.choice(len(members), size=max_pairs, p=pair_counts / total)
    d2 = np.empty(max_pairs, dtype=np.float64)
    for gi in np.unique(which):
        rows = np.flatnonzero(which == gi)
        g = members[gi]
        a = rng.integers(0, len(g), size=len(rows))
        b = (a + rng.integers(1, len(g), size=len(rows))) % len(g)  # b != a
        diff = v[g[a]] - v[g[b]]
        d2[rows] = np.sum(diff * diff, axis=1)
    return float(d2.mean())


def uniformity(
    vectors: np.ndarray, *, t: float = 2.0, max_points: int = 2000, seed: int = 0
) -> float:
    """Wang & Isola uniformity ``log E exp(−t‖x − y‖²)`` over distinct pairs (``nan`` if n < 2).

    Example:
        >>> round(uniformity(np.array([[1.0, 0.0], [-1.0, 0.0]])), 3)  # antipodal: -2 * 4
        -8.0
    """
    v = _unit(vectors)
    n = v.shape[0]
    if n < 2:
        return math.nan
    if n > max_points:
        v = v[np.random.default_rng(seed).choice(n, size=max_points, replace=False)]
        n = max_points
    gram = v @ v.T
    iu = np.triu_indices(n, k=1)
    x = -t * np.clip(2.0 - 2.0 * gram[iu], 0.0, 4.0)
    peak = float(x.max())
    return peak + math.log(float(np.mean(np.exp(x - peak))))


def space_metrics(
    vectors: np.ndarray,
    labels: Sequence[Label],
    *,
    max_points: int = 4000,
    max_pairs: int = 200_000,
    seed: int = 0,
) -> dict[str, float]:
    """Silhouette, alignment and uniformity of a space, plus the counts they were computed on.

    Args:
        vectors: ``(n, dim)`` embeddings (normalised here).
        labels: one label per row: a string, a sequence of strings (first one used) or ``None``
            (skipped for silhouette and alignment).
        max_points: sub-sample size for silhouette (uniformity uses at most 2,000 points).
        max_pairs: positive pairs for alignment beyond which pairs are sampled.
        seed: seed of every sub-sample.

    Returns:
        ``{"silhouette", "alignment", "uniformity", "n_points", "n_labelled", "n_intents"}``;
        the primary metric is :data:`PRIMARY_METRIC`.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> sorted(space_metrics(rng.normal(size=(10, 4)), ["a", "b"] * 5))[:3]
        ['alignment', 'n_intents', 'n_labelled']
    """
    if len(labels) != len(vectors):
        raise ValueError(f"{len(vectors)} vectors but {len(labels)} labels")
    names = [first_label(lab) for lab in labels]
    labelled = [name for name in names if name is not None]
    return {
        "silhouette": silhouette(vectors, labels, max_points=max_points, seed=seed),
        "alignment": alignment(vectors, labels, max_pairs=max_pairs, seed=seed),
        "uniformity": uniformity(vectors, max_points=min(max_points, 2000), seed=seed),
        "n_points": float(len(names)),
        "n_labelled": float(len(labelled)),
        "n_intents": float(len(set(labelled))),
    }


def intent_geometry(vectors: np.ndarray, labels: Sequence[Label]) -> dict[str, dict[str, Any]]:
    """Per intent, how tight it is and how far from its nearest neighbour intent, in the
    encoder's space (not the 2D map, which distorts both).

    ``spread`` is the mean cosine distance of the intent's examples to their centroid (lower =
    tighter); ``nearest`` the closest other intent by centroid, ``gap`` the cosine distance to it
    (higher = further apart). Rows without a label are skipped; a row with several intents
    counts for its first.

    Example:
        >>> v = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
        >>> g = intent_geometry(v, ["a", "a", "b", "b"])
        >>> g["a"]["nearest"], round(g["a"]["gap"], 2), g["a"]["n"]
        ('b', 0.89, 2)
    """
    names = [first_label(lab) for lab in labels]
    unit = _unit(np.asarray(vectors, dtype=np.float32))
    intents = sorted({n for n in names if n is not None})
    if not intents:
        return {}
    members = {name: [i for i, n in enumerate(names) if n == name] for name in intents}
    centroids = _unit(np.stack([unit[members[name]].mean(axis=0) for name in intents]))
    sims = centroids @ centroids.T
    np.fill_diagonal(sims, -np.inf)
    out: dict[str, dict[str, Any]] = {}
    for k, name in enumerate(intents):
        rows = unit[members[name]]
        near = int(np.argmax(sims[k])) if len(intents) > 1 else None
        out[name] = {
            "n": len(members[name]),
            "spread": float(np.mean(1.0 - rows @ centroids[k])),
            "nearest": intents[near] if near is not None else None,
            "gap": float(1.0 - sims[k, near]) if near is not None else None,
        }
    return out


def geometry_diff(
    before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """How each intent moved from ``before`` to ``after`` (:func:`intent_geometry`): spread and
    gap in both, and their changes; biggest movement first (tighter and further apart is
    better). Only intents present in both are listed.

    Example:
        >>> a = {"x": {"n": 3, "spread": 0.4, "nearest": "y", "gap": 0.2}}
        >>> b = {"x": {"n": 3, "spread": 0.1, "nearest": "y", "gap": 0.5}}
        >>> [round(r["tighter"], 2) for r in geometry_diff(a, b)]
        [0.3]
    """
    rows = []
    for name in sorted(set(before) & set(after)):
        b, a = before[name], after[name]
        gap_change = (a["gap"] or 0.0) - (b["gap"] or 0.0)
        rows.append(
            {
                "intent": name,
                "n": a["n"],
                "spread_before": b["spread"],
                "spread_after": a["spread"],
                "tighter": b["spread"] - a["spread"],
                "nearest_after": a["nearest"],
                "gap_before": b["gap"],
                "gap_after": a["gap"],
                "further": gap_change,
            }
        )
    return sorted(rows, key=lambda r: -(abs(r["tighter"]) + abs(r["further"])))
