"""Multi-label projects (Multi-ConvFiT): a classifier head on the frozen specialised encoder,
trained with each retrain, stored inside the model version (``head/``), evaluated with micro/macro
F1 and exact match, and used for predictions next to the k-NN evidence.

A project is multi-label when at least 5 % of its labelled `train` rows carry two or more intents
(:func:`app.services.evaluation.is_multi_label`); single-label projects keep the k-NN rule.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np

from app.services.evaluation import CV_FOLDS, EvalData
from core.encoding.cache import EmbeddingCache
from core.encoding.registry import Encoder
from core.multilabel.head import HeadConfig, MultiLabelHead, load_head, tune_thresholds
from core.multilabel.metrics import multilabel_report
from core.multilabel.thresholds import DEFAULT_THRESHOLD, validate_threshold

HEAD_DIR = "head"
HEAD_KEYS = ("threshold", "tune_thresholds")

_heads: dict[str, MultiLabelHead] = {}
_lock = threading.Lock()


def split_head_options(config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Take the head's options (``threshold``, ``tune_thresholds``) out of a retrain config and
    validate them. Returns (the encoder's config, the head's options)."""
    rest = {k: v for k, v in config.items() if k not in HEAD_KEYS}
    theta = config.get("threshold", DEFAULT_THRESHOLD)
    if isinstance(theta, bool) or not isinstance(theta, int | float):
        raise ValueError(f"threshold must be a number in (0, 1), got {theta!r}.")
    tune = config.get("tune_thresholds", False)
    if not isinstance(tune, bool):
        raise ValueError(f"tune_thresholds must be true or false, got {tune!r}.")
    return rest, {"threshold": validate_threshold(float(theta)), "tune": tune}


def fit_head(
    vectors: np.ndarray,
    labels: list[tuple[str, ...]],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    tune: bool = False,
) -> MultiLabelHead:
    """The paper's head (512 ReLU, dropout 0.4, BCE with label smoothing, AdamW 3e-3) on frozen
    vectors; per-intent θ tuned by 5-fold cross-validation when asked."""
    config = HeadConfig(threshold=threshold)
    head = MultiLabelHead(config).fit(vectors, labels)
    if tune and len(vectors) >= CV_FOLDS:
        head.thresholds = tune_thresholds(
            vectors, labels, head.intents, config=config, folds=CV_FOLDS
        )
    return head


def score(head: MultiLabelHead, vectors: np.ndarray, gold: list[tuple[str, ...]]) -> dict[str, Any]:
    """Micro/macro F1, exact match, per-intent scores and co-occurrence of ``head`` on ``gold``."""
    report = multilabel_report(gold, head.predict(vectors))
    report["accuracy"] = report["exact_match"]  # the history table's headline column
    return report


def evaluate(
    encoder: Encoder, data: EvalData, cache: EmbeddingCache, **options: Any
) -> tuple[dict[str, Any], MultiLabelHead]:
    """Fit a head on ``encoder``'s vectors of the train rows and score it on the test split (or by
    k-fold cross-validation when there is none). Returns (metrics, the head fitted on all train)."""
    train_v = cache.encode(encoder, data.train_texts)
    head = fit_head(train_v, data.train_labels, **options)
    if data.test_texts:
        metrics = score(head, cache.encode(encoder, data.test_texts), data.test_labels)
    else:
        fold = np.arange(len(train_v)) % CV_FOLDS
        gold: list[tuple[str, ...]] = []
        pred: list[tuple[str, ...]] = []
        for k in range(CV_FOLDS):
            inner = [i for i in range(len(train_v)) if fold[i] != k]
            outer = [i for i in range(len(train_v)) if fold[i] == k]
            if not outer:
                continue
            h = fit_head(train_v[inner], [data.train_labels[i] for i in inner], **options)
            gold += [data.train_labels[i] for i in outer]
            pred += h.predict(train_v[outer])
        metrics = multilabel_report(gold, pred)
        metrics["accuracy"] = metrics["exact_match"]
    metrics["split"] = data.split
    metrics["multi_label"] = True
    metrics["threshold"] = head.thresholds.global_threshold
    return metrics, head


def version_head(folder: Path | None, sha256: str | None) -> MultiLabelHead | None:
    """The head stored in a model version's folder, loaded once (None if it has none)."""
    if folder is None or not (folder / HEAD_DIR).is_dir():
        return None
    key = f"{folder}:{sha256}"
    with _lock:
        if key not in _heads:
            _heads[key] = load_head(folder / HEAD_DIR)
        return _heads[key]


def apply_head(rows: list[dict[str, Any]], head: MultiLabelHead, vectors: np.ndarray) -> None:
    """Put the head's decision (``labels``), ``probabilities`` and ``threshold`` into prediction
    dicts, as :meth:`core.bundle.Predictor.predict` does; the k-NN evidence stays."""
    proba = head.predict_proba(vectors)
    decided = head.predict(vectors)
    for row, p, labels in zip(rows, proba, decided, strict=True):
        row["labels"] = list(labels)
        row["probabilities"] = {
            name: round(float(v), 4) for name, v in zip(head.intents, p, strict=True)
        }
        row["threshold"] = head.thresholds.global_threshold
