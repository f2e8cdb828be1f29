"""Persistence: SQLAlchemy models, sessions, repository functions and artifact files.
No torch, no Gradio."""

from __future__ import annotations

from storage.artifacts import ArtifactStore
from storage.db import Database, sqlite_url
from storage.errors import ConflictError, NotFoundError, StorageError

__all__ = [
    "ArtifactStore",
    "ConflictError",
    "Database",
    "NotFoundError",
    "StorageError",
    "sqlite_url",
]
