"""Evaluate an encoder on a project's data the way the product predicts: k-NN over the labelled
`train` pool, scored on the `test` split when there is one, else by k-fold cross-validation."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.context import AppContext
from app.services.versions import Version, resolve_encoder
from core.encoding.cache import EmbeddingCache
from core.encoding.registry import Encoder
from core.evaluation.scoring import cross_validate_knn, evaluate_knn, score_predictions
from core.retrieval.knn import KnnIndex
from storage.projects import get_project
from storage.utterances import list_utterances

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


@dataclass(frozen=True)
class TestPrediction:
    id: int
    text: str
    gold: tuple[str, ...]
    predicted: str
    margin: float

    @property
    def correct(self) -> bool:
        return self.predicted in self.gold

    @property
    def gold_for_scoring(self) -> str:
        """The gold intent a multi-intent row is scored against: the predicted one if it is among
        them (that is a hit), else the first."""
        return self.predicted if self.correct else self.gold[0]


def test_predictions(
    ctx: AppContext, project: str, version: Version = None
) -> tuple[str, list[TestPrediction]]:
    """Predict every labelled `test` utterance with a version's encoder over the current pool.

    Returns the version's display label and one prediction per test row.
    """
    encoder, label = resolve_encoder(ctx, project, version)
    with ctx.db.session() as s:
        rows = [r for r in list_utterances(s, get_project(s, project).id) if r.labels]
    train = [r for r in rows if r.split == "train"]
    test = [r for r in rows if r.split == "test"]
    if not train:
        raise ValueError("No labelled training utterances yet: label a few in the Data tab.")
    if not test:
        raise ValueError(
            "No labelled test utterances: move some to the test split to see an evaluation."
        )
    index = KnnIndex(encoder.dim)
    index.add(
        [r.id for r in train],
        ctx.cache.encode(encoder, [r.text for r in train]),
        [r.text for r in train],
        [r.labels for r in train],
    )
    preds = index.classify(ctx.cache.encode(encoder, [r.text for r in test]), k=1, show=2)
    return label, [
        TestPrediction(r.id, r.text, r.labels, p.top or "", float(p.margin))
        for r, p in zip(test, preds, strict=True)
    ]


def live_evaluation(ctx: AppContext, project: str, version: Version = None) -> dict[str, Any]:
    """Accuracy, macro-F1, per-intent metrics and confusion matrix on the test split, now.

    For a multi-label project: micro/macro F1, exact match, per-intent scores and intent-pair
    co-occurrence of the head on that encoder (no confusion matrix)."""
    encoder, label = resolve_encoder(ctx, project, version)
    with ctx.db.session() as s:
        everything = list_utterances(s, get_project(s, project).id)
    if is_multi_label([r.labels for r in everything if r.split == "train"]):
        from app.services import multilabel

        # "no intent" rows count: the head must learn to say nothing for them
        train = [r for r in everything if r.split == "train"]
        test = [r for r in everything if r.split == "test"]
        data = EvalData(
            [r.text for r in train],
            [r.labels for r in train],
            [r.text for r in test],
            [r.labels for r in test],
        )
        metrics, _ = multilabel.evaluate(encoder, data, ctx.cache)
        metrics["version_label"] = label
        return metrics
    label, preds = test_predictions(ctx, project, version)
    metrics = score_predictions([p.gold_for_scoring for p in preds], [p.predicted for p in preds])
    metrics["version_label"] = label
    return metrics


def confusions(
    ctx: AppContext, project: str, gold: str, predicted: str, version: Version = None
) -> list[TestPrediction]:
    """The test utterances of ``gold`` that were predicted as ``predicted`` (a confusion cell)."""
    _, preds = test_predictions(ctx, project, version)
    return [p for p in preds if p.gold_for_scoring == gold and p.predicted == predicted]
