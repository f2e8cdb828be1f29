"""Nearest-neighbour classification over the labelled pool, and its explanations."""

from __future__ import annotations

from core.retrieval.explain import Explanation, explain
from core.retrieval.knn import IntentScore, KnnIndex, Neighbour, Prediction

__all__ = ["Explanation", "IntentScore", "KnnIndex", "Neighbour", "Prediction", "explain"]
