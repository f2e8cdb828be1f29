"""Encoders that load offline (a registry of embedded models) and the embedding cache."""

from __future__ import annotations

from core.encoding.cache import EmbeddingCache
from core.encoding.registry import DEFAULT_ENCODER, Encoder, load_encoder

__all__ = ["DEFAULT_ENCODER", "EmbeddingCache", "Encoder", "load_encoder"]
