"""The reserved *out of scope* label (defined in :mod:`core.retrieval.scope`, where the one
Predictor factory applies it; re-exported here for the evaluation and training code)."""

from __future__ import annotations

from core.retrieval.scope import OUT_OF_SCOPE, in_scope_labels

__all__ = ["OUT_OF_SCOPE", "in_scope_labels"]
