"""The embedding cache's shards in the model bucket, beside the versions' files, so a machine
that never encoded a version's utterances (the app after a remote worker's retrain, a second app
server, a restart on a fresh disk) reads them instead of encoding them again.

The shard format and its checks belong to :mod:`core.encoding.cache` (this class only moves
files): ``<bucket prefix>/vectors/<fingerprint>/shard-*.npz``. A shard is write-once under a
unique name, uploaded to a temporary key and copied under its name, so a reader never sees half
of one; a shard that still does not read is dropped by the cache, never trusted.
"""

from __future__ import annotations

import contextlib
import logging
import os
import posixpath
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

VECTORS = "vectors"


class BucketVectors:
    """A :class:`core.encoding.cache.VectorMirror` over an fsspec filesystem and a key prefix.

    Example:
        >>> import fsspec, tempfile
        >>> fs = fsspec.filesystem("memory")
        >>> mirror = BucketVectors(fs, "/models-doc")
        >>> folder = Path(tempfile.mkdtemp())
        >>> _ = (folder / "shard-a.npz").write_bytes(b"...")
        >>> mirror.push("minilm@1234", folder / "shard-a.npz")
        >>> other = Path(tempfile.mkdtemp())
        >>> mirror.pull("minilm@1234", other)
        >>> sorted(p.name for p in other.iterdir())
        ['shard-a.npz']
    """

    def __init__(self, fs: Any, base: str) -> None:
        self.fs = fs
        self.base = base.rstrip("/")

    def _folder(self, name: str) -> str:
        if not name or "/" in name or name.startswith("."):
            raise ValueError(f"not a fingerprint folder: {name!r}")
        return posixpath.join(self.base, VECTORS, name)

    def pull(self, name: str, folder: Path) -> None:
        self.fs.invalidate_cache()
        try:
            keys = self.fs.ls(self._folder(name), detail=False)
        except FileNotFoundError:
            return
        for key in keys:
            file = posixpath.basename(key.rstrip("/"))
            if not (file.startswith("shard-") and file.endswith(".npz")):
                continue
            if (folder / file).exists():
                continue
            tmp = folder / f".{file}.{uuid.uuid4().hex[:8]}.tmp"
            try:
                self.fs.get_file(key, str(tmp))
                os.replace(tmp, folder / file)
            finally:
                tmp.unlink(missing_ok=True)

    def push(self, name: str, shard: Path) -> None:
        staging = posixpath.join(self.base, ".tmp", f"vectors-{uuid.uuid4().hex}")
        try:
            self.fs.put_file(str(shard), staging)
            self.fs.copy(staging, posixpath.join(self._folder(name), shard.name))
        finally:
            with contextlib.suppress(FileNotFoundError):
                self.fs.rm(staging)

    def drop(self, name: str, shards: Sequence[str]) -> None:
        for file in shards:
            with contextlib.suppress(FileNotFoundError):
                self.fs.rm(posixpath.join(self._folder(name), posixpath.basename(file)))
