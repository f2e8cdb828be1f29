"""How a model is scored: k-NN metrics and the geometry of the space."""

from __future__ import annotations

from core.evaluation.scoring import cross_validate_knn, evaluate_knn, score_predictions
from core.evaluation.space import space_metrics

__all__ = ["cross_validate_knn", "evaluate_knn", "score_predictions", "space_metrics"]
