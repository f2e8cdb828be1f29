"""Where the embedding cache keeps its vectors: the data directory's ``cache/`` folder, beside the
model files (a restart reads them back), and, when model files live in a bucket, the bucket's
``vectors/`` too (:class:`storage.vectors.BucketVectors`), so the app reads what a worker on
another machine encoded and the other way round. Keys: the encoder's fingerprint (a version's
own hash, or the frozen base model's) and the sha1 of the exact text encoded (after its context
when the project encodes context)."""

from __future__ import annotations

from app.config import Settings
from core.encoding.cache import EmbeddingCache
from storage.artifacts import ArtifactStore
from storage.remote_artifacts import RemoteArtifactStore
from storage.vectors import BucketVectors


def open_cache(settings: Settings, artifacts: ArtifactStore) -> EmbeddingCache:
    """The process's embedding cache over ``settings.cache_dir`` (and the bucket of
    ``artifacts`` when it is remote).

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from app.config import Settings
        >>> from storage.remote_artifacts import open_artifacts
        >>> tmp = Path(tempfile.mkdtemp())
        >>> settings = Settings(data_dir=tmp, artifacts_url="memory://models")
        >>> cache = open_cache(settings, open_artifacts("memory://models", cache_dir=tmp / "a"))
        >>> type(cache.mirror).__name__, cache.root == tmp / "cache"
        ('BucketVectors', True)
    """
    mirror = None
    if isinstance(artifacts, RemoteArtifactStore):
        mirror = BucketVectors(artifacts.fs, artifacts.base)
    return EmbeddingCache(settings.cache_dir, mirror=mirror)
