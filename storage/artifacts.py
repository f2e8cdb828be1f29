"""Model artifacts as files under one directory, referenced from the database by relative path
and sha256. Written to a temporary name and renamed when complete, so a crash never leaves a
half-written artifact under a name the database could point to.

:func:`storage.remote_artifacts.open_artifacts` picks the store for a location: a local folder
(this class), or a bucket (``s3://…``, any fsspec URL) behind the same interface over a local
cache."""

from __future__ import annotations

import hashlib
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# A temporary write untouched this long belongs to a dead writer (a live one finishes within
# minutes); sweeps spare anything younger, another process's write in progress included.
STALE_SECONDS = 3600.0


def tree_sha256(path: Path) -> tuple[str, int]:
    """sha256 over the relative paths and contents of every file under ``path``; and total bytes."""
    h = hashlib.sha256()
    total = 0
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for f in files:
        rel = f.relative_to(path).as_posix() if path.is_dir() else f.name
        h.update(rel.encode() + b"\0")
        with f.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
                total += len(chunk)
    return h.hexdigest(), total


class ArtifactStore:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / ".tmp").mkdir(exist_ok=True)

    def path(self, rel: str) -> Path:
        """The local folder of artifact ``rel`` (it may not exist)."""
        p = (self.root / rel).resolve()
        if self.root.resolve() not in p.parents:
            raise ValueError(f"artifact path {rel!r} escapes the artifact directory")
        return p

    @contextmanager
    def writing(self, rel: str) -> Iterator[Path]:
        """Yield a temporary directory to fill; on success it is renamed to ``rel`` atomically, on
        error it is removed."""
        final = self.path(rel)
        if final.exists():
            raise FileExistsError(f"artifact {rel!r} already exists")
        tmp = self.root / ".tmp" / f"{uuid.uuid4().hex}"
        tmp.mkdir(parents=True)
        try:
            yield tmp
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    def verify(self, rel: str, sha256: str) -> bool:
        p = self.path(rel)
        return p.exists() and tree_sha256(p)[0] == sha256

    def remove(self, rel: str) -> None:
        shutil.rmtree(self.path(rel), ignore_errors=True)

    def check(self) -> None:
        """Raise :class:`OSError` unless a new version could be written here now (``intent-studio
        worker --check``, a worker's healthcheck)."""
        if not os.access(self.root / ".tmp", os.W_OK):
            raise PermissionError(f"cannot write to {self.root}")

    def sweep(self, older_than: float = STALE_SECONDS) -> int:
        """Remove leftovers of crashed writes: temporary folders untouched for ``older_than``
        seconds (younger ones may be another process's write in progress). Returns how many."""
        n = 0
        now = time.time()
        for p in (self.root / ".tmp").iterdir():
            if now - _newest_mtime(p) > older_than:
                shutil.rmtree(p, ignore_errors=True)
                n += 1
        return n


def _newest_mtime(path: Path) -> float:
    """The latest modification time in a file tree (0 for one that vanished meanwhile)."""
    try:
        times = [path.lstat().st_mtime, *(p.lstat().st_mtime for p in path.rglob("*"))]
    except FileNotFoundError:
        return 0.0
    return max(times)
