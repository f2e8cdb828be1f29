"""How a model is scored, one contract for every caller: the data (:class:`EvalData`), one fold
splitter, one single-label rule (k-NN), one multi-label rule (the head), space metrics."""

from __future__ import annotations

from core.evaluation.data import CV_FOLDS, EvalData
from core.evaluation.scoring import (
    cross_validate_knn,
    evaluate_knn,
    score_predictions,
    scoring_gold,
)
from core.evaluation.space import space_metrics

__all__ = [
    "CV_FOLDS",
    "EvalData",
    "cross_validate_knn",
    "evaluate_knn",
    "score_predictions",
    "scoring_gold",
    "space_metrics",
]
