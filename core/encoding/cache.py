"""Embeddings cached by (encoder fingerprint, text), in memory and on disk, so a restart does not
re-encode what was encoded before: only new or edited texts are encoded.

Layout: ``<root>/<fingerprint>/shard-<n>.npz`` with ``keys`` (sha1 of the exact text encoded, 40
hex characters) and ``vectors`` (float32, one row per key). Each batch of new texts is one shard,
written to a temporary name, flushed and renamed, so a process killed at any point never leaves a
half shard under a name that is read: a long encoding in chunks (a log dump's rows, issue 72)
resumes after a kill with what its chunks wrote. Once :data:`COMPACT_AFTER` shards are there, the
smaller half of them are merged into one (tiered: a large pool's big shards are not written
again at every compaction), off the lock that lookups take. A shard is never trusted: one that
does not read as that (a torn or foreign file, another width, NaNs) is deleted and its texts are
encoded again. :meth:`EmbeddingCache.pick_up` reads the shards another process wrote since (a
training worker that encoded a chunk of rows for the server).

A :class:`VectorMirror` (the model bucket when artifacts are remote:
:class:`storage.vectors.BucketVectors`) shares the shards between machines: a fingerprint's
shards are pulled from it the first time it is used and every new shard is pushed to it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
import uuid
import zipfile
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


class VectorMirror(Protocol):
    """A second home of the shards, shared by machines (e.g. the model bucket)."""

    def pull(self, name: str, folder: Path) -> None:
        """Copy the shards of fingerprint folder ``name`` that ``folder`` lacks into it."""

    def push(self, name: str, shard: Path) -> None:
        """Store a new shard of fingerprint folder ``name``."""

    def drop(self, name: str, shards: Sequence[str]) -> None:
        """Remove shards (by file name) of fingerprint folder ``name`` that a compaction replaced."""


COMPACT_AFTER = 32
_KEY = re.compile(r"^[0-9a-f]{40}$")


def text_key(text: str) -> str:
    """The cache key of a text: sha1 of its exact UTF-8 bytes (hex)."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def read_shard(path: Path, dim: int | None = None) -> tuple[list[str], np.ndarray]:
    """A shard's keys and float32 vectors, checked (no pickle, one key per row, 40-hex keys, the
    width ``dim`` when given, finite values).

    Raises:
        ValueError: the file is not a shard of that width (torn, foreign or corrupted).
        OSError: it cannot be read.
    """
    try:
        with np.load(path, allow_pickle=False) as z:
            if set(z.files) != {"keys", "vectors"}:
                raise ValueError(f"unexpected arrays {sorted(z.files)}")
            keys, vectors = z["keys"], z["vectors"]
    except (KeyError, EOFError, zipfile.BadZipFile) as exc:  # a torn or foreign zip
        raise ValueError(str(exc)) from exc
    if keys.ndim != 1 or keys.dtype.kind != "U":
        raise ValueError(f"keys of dtype {keys.dtype} and shape {keys.shape}")
    if vectors.dtype != np.float32 or vectors.ndim != 2 or len(vectors) != len(keys):
        raise ValueError(f"vectors of dtype {vectors.dtype} and shape {vectors.shape}")
    if dim is not None and vectors.shape[1] != dim:
        raise ValueError(f"vectors of width {vectors.shape[1]}, the encoder's is {dim}")
    listed = keys.tolist()
    if not all(_KEY.match(k) for k in listed) or not np.isfinite(vectors).all():
        raise ValueError("malformed keys or non-finite vectors")
    return listed, vectors


def write_shard(folder: Path, keys: Sequence[str], vectors: np.ndarray) -> Path:
    """Write a new shard into ``folder`` atomically (temporary name, flush, rename); its path."""
    name = f"shard-{os.getpid()}-{uuid.uuid4().hex[:12]}.npz"
    tmp = folder / f".{name}.tmp"
    try:
        with tmp.open("wb") as fh:
            np.savez(fh, keys=np.array(list(keys), dtype="U40"), vectors=vectors.astype(np.float32))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, folder / name)
    finally:
        tmp.unlink(missing_ok=True)
    return folder / name


class EmbeddingCache:
    """Vectors by (encoder fingerprint, text hash); :attr:`encoded` counts the texts the real
    encoders encoded (a cache hit counts nothing), for tests and benchmarks."""

    def __init__(
        self, root: str | Path | None = None, *, mirror: VectorMirror | None = None
    ) -> None:
        self.root = Path(root) if root is not None else None
        self.mirror = mirror
        self.encoded = 0
        self._mem: dict[str, dict[str, np.ndarray]] = {}
        self._loaded: set[str] = set()
        self._read: dict[str, set[str]] = {}  # per fingerprint: the shard files read or written
        self._lock = threading.Lock()
        self._disk = threading.Lock()  # held while shards are written or compacted

    @staticmethod
    def _name(fingerprint: str) -> str:
        return "".join(c if c.isalnum() or c in "-_.@" else "_" for c in fingerprint)

    def _dir(self, fingerprint: str) -> Path | None:
        return None if self.root is None else self.root / self._name(fingerprint)

    def folder(self, fingerprint: str) -> Path | None:
        """Where the shards of ``fingerprint`` are kept on disk (None: in memory only)."""
        return self._dir(fingerprint)

    def _load(self, fingerprint: str, dim: int | None = None) -> dict[str, np.ndarray]:
        table = self._mem.setdefault(fingerprint, {})
        if fingerprint in self._loaded:
            return table
        self._loaded.add(fingerprint)
        d = self._dir(fingerprint)
        if d is None:
            return table
        if self.mirror is not None:
            try:
                d.mkdir(parents=True, exist_ok=True)
                self.mirror.pull(self._name(fingerprint), d)
            except Exception as exc:  # the bucket is away: what is local still counts
                logger.warning("could not pull vectors of %s: %s", fingerprint, exc)
        if not d.exists():
            return table
        self._read_new(fingerprint, d, table, dim)
        return table

    def _read_new(
        self, fingerprint: str, d: Path, table: dict[str, np.ndarray], dim: int | None
    ) -> int:
        """Read the shards of ``d`` not read yet into ``table``; how many keys were new."""
        read = self._read.setdefault(fingerprint, set())
        new = 0
        for shard in sorted(d.glob("shard-*.npz")):
            if shard.name in read:
                continue
            try:
                keys, vectors = read_shard(shard, dim)
            except FileNotFoundError:  # compacted away by another process meanwhile
                continue
            except (OSError, ValueError) as exc:  # never trusted: dropped, its texts re-encoded
                logger.warning("dropping unreadable cache shard %s: %s", shard, exc)
                shard.unlink(missing_ok=True)
                continue
            read.add(shard.name)
            new += sum(k not in table for k in keys)
            table.update(zip(keys, vectors, strict=True))
        return new

    def pick_up(self, fingerprint: str, dim: int | None = None) -> int:
        """Read what other processes wrote for ``fingerprint`` since this one last looked (its
        folder, and the mirror's shards pulled first); how many texts' vectors were new."""
        d = self._dir(fingerprint)
        if d is None:
            return 0
        if self.mirror is not None:
            try:
                d.mkdir(parents=True, exist_ok=True)
                self.mirror.pull(self._name(fingerprint), d)
            except Exception as exc:  # the bucket is away: what is local still counts
                logger.warning("could not pull vectors of %s: %s", fingerprint, exc)
        if not d.exists():
            return 0
        with self._lock:
            table = self._load(fingerprint, dim)
            return self._read_new(fingerprint, d, table, dim)

    def _persist(self, fingerprint: str, keys: list[str], vectors: np.ndarray) -> None:
        """Write a new shard of ``keys`` (and compact the smaller half of the shards once there
        are :data:`COMPACT_AFTER`); called without :attr:`_lock`, so lookups go on meanwhile."""
        d = self._dir(fingerprint)
        if d is None or not keys:
            return
        with self._disk:
            d.mkdir(parents=True, exist_ok=True)
            written = write_shard(d, keys, vectors)
            with self._lock:
                self._read.setdefault(fingerprint, set()).add(written.name)
            shards = sorted(d.glob("shard-*.npz"))
            replaced: list[Path] = []
            merged: Path | None = None
            if len(shards) >= COMPACT_AFTER:
                merged, replaced = self._compact(fingerprint, d, shards)
        if self.mirror is not None:
            try:
                for shard in (written, merged):
                    if shard is not None:
                        self.mirror.push(self._name(fingerprint), shard)
                if replaced:
                    self.mirror.drop(self._name(fingerprint), [s.name for s in replaced])
            except Exception as exc:  # kept locally; another machine encodes them itself
                logger.warning("could not push vectors of %s: %s", fingerprint, exc)

    def _compact(
        self, fingerprint: str, d: Path, shards: list[Path]
    ) -> tuple[Path | None, list[Path]]:
        """Merge the smaller half of ``shards`` into one: the merged shard and those it
        replaced (removed here). A shard that no longer reads is left to :meth:`_load`."""
        by_size = sorted(shards, key=lambda p: (p.stat().st_size if p.exists() else 0, p.name))
        chosen = by_size[: max(2, len(shards) // 2)]
        keys: dict[str, np.ndarray] = {}
        used: list[Path] = []
        for shard in chosen:
            try:
                found, vectors = read_shard(shard)
            except (OSError, ValueError):
                continue
            keys.update(zip(found, vectors, strict=True))
            used.append(shard)
        if len(used) < 2:
            return None, []
        merged = write_shard(d, list(keys), np.stack(list(keys.values())))
        with self._lock:
            read = self._read.setdefault(fingerprint, set())
            read.add(merged.name)
            read.difference_update(s.name for s in used)
        for shard in used:
            shard.unlink(missing_ok=True)
        return merged, used

    def lookup(
        self, fingerprint: str, texts: Sequence[str], dim: int | None = None
    ) -> list[np.ndarray | None]:
        """The cached vector of each text (None where there is none); ``dim``: the encoder's
        width, which the shards on disk must have."""
        with self._lock:
            table = self._load(fingerprint, dim)
            return [table.get(text_key(t)) for t in texts]

    def missing(self, encoder: CachedEncoder, texts: Sequence[str]) -> list[str]:
        """The distinct texts of ``texts`` that have no cached vector for ``encoder`` yet (what
        :meth:`encode` would encode)."""
        found = self.lookup(encoder.fingerprint, texts, encoder.dim)
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
            vecs = np.asarray(encoder.encode(missing, progress=progress), dtype=np.float32)
            keys = [text_key(t) for t in missing]
            with self._lock:
                self.encoded += len(missing)
                table = self._load(fp)
                for k, v in zip(keys, vecs, strict=True):
                    table[k] = v
            try:
                self._persist(fp, keys, vecs)
            except OSError as exc:  # disk full: the cache is an optimisation, keep going
                logger.warning("could not persist embedding cache: %s", exc)
        found = self.lookup(fp, texts)
        return np.ascontiguousarray(np.stack([v for v in found if v is not None]), dtype=np.float32)

    def lookup_keys(
        self, fingerprint: str, keys: Sequence[str], dim: int | None = None
    ) -> list[np.ndarray | None]:
        """:meth:`lookup` by the texts' keys (:func:`text_key`) already computed."""
        with self._lock:
            table = self._load(fingerprint, dim)
            return [table.get(k) for k in keys]

    def write_through(self, encoder: CachedEncoder, texts: Sequence[str]) -> int:
        """Encode ``texts`` and write them as a shard (and to the mirror) without reading the
        cache or keeping them in memory: a worker encoding a chunk of rows for a server, whose
        memory must not grow with every chunk; how many were encoded."""
        if not texts:
            return 0
        vectors = np.asarray(encoder.encode(list(texts)), dtype=np.float32)
        with self._lock:
            self.encoded += len(texts)
        self._persist(encoder.fingerprint, [text_key(t) for t in texts], vectors)
        return len(texts)

    def size(self, fingerprint: str) -> int:
        with self._lock:
            return len(self._load(fingerprint))
