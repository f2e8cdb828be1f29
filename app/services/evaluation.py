"""Evaluate an encoder on a project's data the way the product predicts: k-NN over the labelled
`train` pool, scored on the `test` split when there is one, else by k-fold cross-validation."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.embedding_cache import EmbeddingCache
from core.encoders import Encoder
from core.evaluation import cross_validate_knn, evaluate_knn

logger = logging.getLogger(__name__)

CV_FOLDS = 5
# A project is treated as multi-label when at least this share of its labelled rows carry 2+ intents.
MULTI_LABEL_SHARE = 0.05


@dataclass(frozen=True)
class EvalData:
    train_texts: list[str]
    train_labels: list[tuple[str, ...]]
    test_texts: list[str]
    test_labels: list[tuple[str, ...]]

    @property
    def split(self) -> str:
        return "test" if self.test_texts else f"cv{CV_FOLDS}"


def is_multi_label(labels: Sequence[tuple[str, ...]]) -> bool:
    labelled = [lab for lab in labels if lab]
    if not labelled:
        return False
    return sum(len(lab) > 1 for lab in labelled) / len(labelled) >= MULTI_LABEL_SHARE


def _expand(vectors: np.ndarray, labels: Sequence[tuple[str, ...]]) -> tuple[np.ndarray, list[str]]:
    """One row per (vector, intent): under the nearest-example rule an example carrying two intents
    scores for both, exactly as the live pool does."""
    idx = [i for i, lab in enumerate(labels) for _ in lab]
    names = [name for lab in labels for name in lab]
    return vectors[idx], names


def evaluate(
    encoder: Encoder, data: EvalData, cache: EmbeddingCache | None = None, *, k: int = 1
) -> dict[str, Any]:
    """Single-label k-NN metrics of ``encoder`` on ``data`` (gold = first intent of a test row)."""

    def enc(texts: list[str]) -> np.ndarray:
        return cache.encode(encoder, texts) if cache is not None else encoder.encode(texts)

    train_v = enc(data.train_texts)
    if data.test_texts:
        test_v = enc(data.test_texts)
        pool_v, pool_y = _expand(train_v, data.train_labels)
        metrics = evaluate_knn(pool_v, pool_y, test_v, [lab[0] for lab in data.test_labels], k=k)
    else:
        keep = [i for i, lab in enumerate(data.train_labels) if lab]
        metrics = cross_validate_knn(
            train_v[keep], [data.train_labels[i][0] for i in keep], folds=CV_FOLDS, k=k
        )
    metrics["split"] = data.split
    return metrics


def gate(new: dict[str, Any], reference: dict[str, Any], tolerance: float) -> tuple[bool, str]:
    """The promotion gate: a new version may not lose more than ``tolerance`` (absolute) of the
    primary metric against the reference (the active version, or the frozen base)."""
    key = str(new.get("primary", "accuracy"))
    a, b = float(new[key]), float(reference[key])
    if a + tolerance >= b:
        return True, f"{key} {a:.3f} vs {b:.3f} (tolerance {tolerance:.3f}): promoted."
    return False, (
        f"{key} fell from {b:.3f} to {a:.3f}, more than the tolerance of {tolerance:.3f}; "
        "kept the active version. You may activate the new one by hand."
    )


def per_intent_delta(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    """Per-intent F1 of version a and b and the change (b − a), worst change first."""
    pa, pb = a.get("per_intent", {}), b.get("per_intent", {})
    rows = []
    for name in sorted(set(pa) | set(pb)):
        fa = pa.get(name, {}).get("f1")
        fb = pb.get(name, {}).get("f1")
        delta = None if fa is None or fb is None else round(fb - fa, 4)
        rows.append({"intent": name, "f1_a": fa, "f1_b": fb, "delta": delta})
    rows.sort(key=lambda r: (r["delta"] is None, r["delta"] if r["delta"] is not None else 0))
    return rows
