"""ML only: encoders, embedding cache, k-NN classification, training, projections, metrics, bundles.
No SQL, no Gradio."""

from __future__ import annotations

from core.embedding_cache import EmbeddingCache
from core.encoders import DEFAULT_ENCODER, Encoder, load_encoder
from core.knn import IntentScore, KnnIndex, Neighbour, Prediction

__all__ = [
    "DEFAULT_ENCODER",
    "EmbeddingCache",
    "Encoder",
    "IntentScore",
    "KnnIndex",
    "Neighbour",
    "Prediction",
    "load_encoder",
]
