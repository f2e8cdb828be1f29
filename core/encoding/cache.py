"""Embeddings cached by (encoder fingerprint, text), in memory and on disk, so a restart does not
re-encode the labelled pool.

Layout: ``<root>/<fingerprint>/shard-<n>.npz`` with ``keys`` (sha1 of the text) and ``vectors``.
Each batch of new texts is one shard, written to a temporary name and renamed; many small shards
are compacted into one.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

logger = logging.getLogger(__name__)


class CachedEncoder(Protocol):
    """What the cache needs of an encoder (:class:`core.encoding.registry.Encoder`, or the int8
    :class:`core.bundle.onnx_encoder.OnnxEncoder`): a fingerprint that names its vector space."""

    name: str
    fingerprint: str

    @property
    def dim(self) -> int: ...

    def encode(
        self, texts: Sequence[str], *, progress: Callable[[int, int], None] | None = None
    ) -> np.ndarray: ...


COMPACT_AFTER = 32


def text_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root) if root is not None else None
        self._mem: dict[str, dict[str, np.ndarray]] = {}
        self._loaded: set[str] = set()
        self._lock = threading.Lock()

    def _dir(self, fingerprint: str) -> Path | None:
        if self.root is None:
            return None
        safe = "".join(c if c.isalnum() or c in "-_.@" else "_" for c in fingerprint)
        return self.root / safe

    def _load(self, fingerprint: str) -> dict[str, np.ndarray]:
        table = self._mem.setdefault(fingerprint, {})
        if fingerprint in self._loaded:
            return table
        self._loaded.add(fingerprint)
        d = self._dir(fingerprint)
        if d is None or not d.exists():
            return table
        for shard in sorted(d.glob("shard-*.npz")):
            try:
                with np.load(shard, allow_pickle=False) as z:
                    for k, v in zip(z["keys"].tolist(), z["vectors"], strict=True):
                        table[str(k)] = v
            except (OSError, ValueError, KeyError) as exc:  # a torn file from a crash: drop it
                logger.warning("dropping unreadable cache shard %s: %s", shard, exc)
                shard.unlink(missing_ok=True)
        return table

    def _persist(self, fingerprint: str, keys: list[str], vectors: np.ndarray) -> None:
        d = self._dir(fingerprint)
        if d is None or not keys:
            return
        d.mkdir(parents=True, exist_ok=True)
        shards = sorted(d.glob("shard-*.npz"))
        if len(shards) >= COMPACT_AFTER:
            table = self._mem[fingerprint]
            all_keys = list(table)
            self._write(d, all_keys, np.stack([table[k] for k in all_keys]))
            for s in shards:
                s.unlink(missing_ok=True)
            return
        self._write(d, keys, vectors)

    @staticmethod
    def _write(d: Path, keys: list[str], vectors: np.ndarray) -> None:
        name = f"shard-{os.getpid()}-{uuid.uuid4().hex[:12]}.npz"
        tmp = d / f".{name}.tmp"
        with tmp.open("wb") as fh:
            np.savez(fh, keys=np.array(keys), vectors=vectors.astype(np.float32))
        os.replace(tmp, d / name)

    def lookup(self, fingerprint: str, texts: Sequence[str]) -> list[np.ndarray | None]:
        with self._lock:
            table = self._load(fingerprint)
            return [table.get(text_key(t)) for t in texts]

    def missing(self, encoder: CachedEncoder, texts: Sequence[str]) -> list[str]:
        """The distinct texts of ``texts`` that have no cached vector for ``encoder`` yet (what
        :meth:`encode` would encode)."""
        found = self.lookup(encoder.fingerprint, texts)
        return sorted({t for t, v in zip(texts, found, strict=True) if v is None})

    def encode(
        self,
        encoder: CachedEncoder,
        texts: Sequence[str],
        *,
        progress: Callable[[int, int], None] | None = None,
    ) -> np.ndarray:
        """Vectors for ``texts`` from the cache, encoding (and caching) only the missing ones;
        ``progress(done, total)`` counts the texts encoded of :meth:`missing`."""
        if not texts:
            return np.zeros((0, encoder.dim), dtype=np.float32)
        fp = encoder.fingerprint
        missing = self.missing(encoder, texts)
        if missing:
            vecs = encoder.encode(missing, progress=progress)
            keys = [text_key(t) for t in missing]
            with self._lock:
                table = self._load(fp)
                for k, v in zip(keys, vecs, strict=True):
                    table[k] = v
                try:
                    self._persist(fp, keys, vecs)
                except OSError as exc:  # disk full: the cache is an optimisation, keep going
                    logger.warning("could not persist embedding cache: %s", exc)
        found = self.lookup(fp, texts)
        return np.ascontiguousarray(np.stack([v for v in found if v is not None]), dtype=np.float32)

    def size(self, fingerprint: str) -> int:
        with self._lock:
            return len(self._load(fingerprint))
