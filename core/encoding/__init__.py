"""Encoders that load offline (a registry of embedded models) and the embedding cache."""

from __future__ import annotations

from core.encoding.anchor_encoder import anchor_encoder_of
from core.encoding.cache import EmbeddingCache
from core.encoding.registry import DEFAULT_ENCODER, Encoder, load_encoder

__all__ = ["DEFAULT_ENCODER", "EmbeddingCache", "Encoder", "anchor_encoder_of", "load_encoder"]
