"""Model artifacts in a bucket (``s3://bucket/prefix`` or any fsspec URL), so a training worker on
one machine and the app on another share model files. The interface is :class:`ArtifactStore`'s:
callers still fill and read local folders.

A version is written to a temporary key (``.tmp/<token>/``), read back and checked against its
sha256, copied under its name (after a ``.writing.json`` object that says a copy is under way), and
committed last by a marker object (``.committed.json``, with the hash and the file list). Readers
only see committed versions: a worker killed at any point leaves nothing a reader or the database
can point to, only a temporary key or an uncommitted copy, both removed by :meth:`sweep` once
untouched for an hour (the worker sweeps at start and every few minutes). A version is downloaded
once into the local cache, checked against the marker's hash, and read there.

A bucket that does not answer (down, unreachable, timing out) raises
:class:`storage.errors.ArtifactsUnavailable` from every method, within seconds: S3 connections
give up after :data:`CONNECT_TIMEOUT_S` and :data:`ATTEMPTS` tries (botocore's defaults took 8 s
for a refused connection and minutes for a host that drops packets). A writer that would rather
wait (a training job) writes through :meth:`RemoteArtifactStore.patient` (:mod:`storage.patience`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import posixpath
import shutil
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from copy import copy
from functools import wraps
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from storage.artifacts import STALE_SECONDS, ArtifactStore, tree_sha256
from storage.errors import ArtifactsUnavailable
from storage.patience import Patience, patiently

logger = logging.getLogger(__name__)

MARKER = ".committed.json"
# Written under a version's name before its files are copied there, removed once committed: an
# old one without MARKER beside it marks a dead writer's partial copy.
COPYING = ".writing.json"


def open_artifacts(location: str | Path, *, cache_dir: Path) -> ArtifactStore:
    """The artifact store at ``location``: a folder (or ``file://`` URL) is used in place; any
    other URL (``s3://bucket/prefix``) is a bucket reached through fsspec, with model files
    downloaded on first use to ``cache_dir``. An S3-compatible server other than AWS is named by
    ``AWS_ENDPOINT_URL`` (credentials: the usual ``AWS_*`` variables).

    Example:
        >>> import tempfile
        >>> tmp = Path(tempfile.mkdtemp())
        >>> type(open_artifacts(tmp / "a", cache_dir=tmp / "c")).__name__
        'ArtifactStore'
        >>> type(open_artifacts("memory://models", cache_dir=tmp / "c")).__name__
        'RemoteArtifactStore'
    """
    text = str(location)
    if text.startswith("file://"):
        return ArtifactStore(text.removeprefix("file://"))
    if "://" not in text:
        return ArtifactStore(text)
    return RemoteArtifactStore(text, cache_dir=cache_dir)


# An S3 server that does not answer is known for down within seconds (see the module).
CONNECT_TIMEOUT_S = 5
ATTEMPTS = 2


def _storage_options(url: str) -> dict[str, Any]:
    if not url.startswith(("s3://", "s3a://")):
        return {}
    options: dict[str, Any] = {
        "config_kwargs": {
            "connect_timeout": CONNECT_TIMEOUT_S,
            "retries": {"max_attempts": ATTEMPTS, "mode": "standard"},
        }
    }
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        options["client_kwargs"] = {"endpoint_url": endpoint}
    return options


def unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised from) says the store did not answer: a
    connection refused, reset or timed out; not a missing key, a refusal or bad data.

    >>> unreachable(ConnectionRefusedError()), unreachable(FileNotFoundError("x"))
    (True, False)
    """
    kinds: tuple[type[BaseException], ...] = (ConnectionError, TimeoutError)
    try:
        from botocore import exceptions as boto

        kinds += (boto.ConnectionError, boto.HTTPClientError)
    except ImportError:  # no S3 client installed: only fsspec's own filesystems
        pass
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kinds):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


P = ParamSpec("P")
R = TypeVar("R")


def _answering(method: Callable[P, R]) -> Callable[P, R]:
    """A store method whose unanswered calls raise :class:`ArtifactsUnavailable`."""

    @wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except ArtifactsUnavailable:
            raise
        except Exception as exc:
            if unreachable(exc):
                store = args[0]
                raise ArtifactsUnavailable(getattr(store, "url", "?"), exc) from exc
            raise

    return call


class RemoteArtifactStore(ArtifactStore):
    """Artifacts in a bucket, read through a local cache (``root`` is the cache folder)."""

    def __init__(self, url: str, *, cache_dir: str | Path) -> None:
        import fsspec

        super().__init__(cache_dir)
        self.url = url
        self.fs, self.base = fsspec.core.url_to_fs(url, **_storage_options(url))
        self.base = self.base.rstrip("/")
        self.patience: Patience | None = None  # a write gives up at once

    def patient(self, patience: Patience) -> RemoteArtifactStore:
        """This store (its bucket, cache and connections) for a writer that waits: a version's
        :meth:`writing` tries again while the bucket does not answer, as ``patience`` allows."""
        store = copy(self)
        store.patience = patience
        return store

    # --- keys ------------------------------------------------------------------------------

    def _key(self, rel: str, *parts: str) -> str:
        ArtifactStore.path(self, rel)  # refuses a path that escapes
        clean = posixpath.normpath(Path(rel).as_posix())
        return "/".join([self.base, clean, *parts])

    @_answering
    def _committed(self, rel: str) -> dict[str, Any] | None:
        """The marker of a committed version, or None."""
        self.fs.invalidate_cache()
        try:
            raw = self.fs.cat_file(self._key(rel, MARKER))
        except FileNotFoundError:
            return None
        marker: dict[str, Any] = json.loads(raw)
        return marker

    def _remote_sha256(self, prefix: str, files: list[str]) -> tuple[str, int]:
        """:func:`tree_sha256` of the objects ``prefix/<file>``, streamed back from the store."""
        h = hashlib.sha256()
        total = 0
        for rel in files:
            h.update(rel.encode() + b"\0")
            with self.fs.open(f"{prefix}/{rel}", "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
                    total += len(chunk)
        return h.hexdigest(), total

    # --- the ArtifactStore interface -------------------------------------------------------

    @_answering
    def path(self, rel: str) -> Path:
        """The local folder of artifact ``rel``, downloaded (and checked) on first use; it does
        not exist when the version is not committed in the store."""
        local = super().path(rel)
        if local.exists():
            return local
        marker = self._committed(rel)
        if marker is None:
            return local
        tmp = self.root / ".tmp" / uuid.uuid4().hex
        try:
            for name in marker["files"]:
                dest = tmp / name
                dest.parent.mkdir(parents=True, exist_ok=True)
                self.fs.get_file(self._key(rel, name), str(dest))
            if tree_sha256(tmp)[0] != marker["sha256"]:
                raise OSError(f"artifact {rel!r} in {self.url} does not match its recorded hash")
            local.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.replace(tmp, local)
            except OSError:
                if not local.exists():
                    raise  # else another thread fetched the same version meanwhile: keep it
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return local

    @contextmanager
    def writing(self, rel: str) -> Iterator[Path]:
        """Yield a local temporary folder to fill; on success it is uploaded to a temporary key,
        checked, copied under ``rel`` and committed (and kept as the local cached copy); on error
        nothing is left, locally or in the store."""
        local = super().path(rel)
        if patiently(lambda: self._committed(rel), self.patience, "the name check") is not None:
            raise FileExistsError(f"artifact {rel!r} already exists")
        tmp = self.root / ".tmp" / uuid.uuid4().hex
        tmp.mkdir(parents=True)
        try:
            yield tmp
            patiently(lambda: self._upload(rel, tmp), self.patience, "the upload")
            shutil.rmtree(local, ignore_errors=True)  # a stale copy of a removed version
            local.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, local)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    @_answering
    def _upload(self, rel: str, folder: Path) -> None:
        sha, size = tree_sha256(folder)
        files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
        staging = f"{self.base}/.tmp/{uuid.uuid4().hex}"
        try:
            for name in files:
                self.fs.put_file(str(folder / name), f"{staging}/{name}")
            if self._remote_sha256(staging, files) != (sha, size):
                raise OSError(f"the upload of {rel!r} to {self.url} did not arrive intact")
            self.fs.pipe_file(self._key(rel, COPYING), b"{}")
            for name in files:
                self.fs.copy(f"{staging}/{name}", self._key(rel, name))
            marker = {"sha256": sha, "size": size, "files": files}
            self.fs.pipe_file(self._key(rel, MARKER), json.dumps(marker).encode())
            self._rm(self._key(rel, COPYING))
        except BaseException:
            self._rm(self._key(rel))
            raise
        finally:
            self._rm(staging)

    def _rm(self, key: str) -> None:
        try:
            self.fs.rm(key, recursive=True)
        except FileNotFoundError:
            pass
        except Exception as exc:  # swept later; a store away is one line, not a traceback
            logger.warning(
                "could not remove %s from %s", key, self.url, exc_info=not unreachable(exc)
            )

    # --- backup and restore (app.services.projects.backup) -------------------------------------------

    @_answering
    def committed_keys(self) -> list[str]:
        """Every object of every committed version, relative to the store's prefix: what a
        backup copies (temporary keys and uncommitted copies are a dead writer's leftovers)."""
        self.fs.invalidate_cache()
        try:
            found = self.fs.find(self.base)
        except FileNotFoundError:
            return []
        keys = [k[len(self.base) + 1 :] for k in found if k.startswith(self.base + "/")]
        versions = {posixpath.dirname(k) for k in keys if posixpath.basename(k) == MARKER}
        return sorted(
            k
            for k in keys
            if posixpath.basename(k) != COPYING
            and any(k.startswith(v + "/") for v in versions)
            and not k.startswith(".tmp/")
        )

    @_answering
    def is_empty(self) -> bool:
        """Whether the store holds no object at all under its prefix."""
        self.fs.invalidate_cache()
        try:
            return not self.fs.find(self.base)
        except FileNotFoundError:
            return True

    @_answering
    def remove_all(self) -> None:
        """Remove every object under the prefix (a restore into an empty prefix that failed)."""
        self._rm(self.base)
        self.fs.invalidate_cache()

    @_answering
    def download(self, key: str, dest: Path) -> None:
        """Copy object ``key`` (relative to the prefix) to the local file ``dest``."""
        dest.parent.mkdir(parents=True, exist_ok=True)
        self.fs.get_file(f"{self.base}/{key}", str(dest))

    @_answering
    def upload_all(self, folder: Path) -> int:
        """Copy every file under ``folder`` to the same key under the prefix, each version's
        marker last (a reader never sees a version committed before its files are there); on a
        failure, what was copied is removed again. Returns how many files."""
        files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
        files.sort(key=lambda k: posixpath.basename(k) == MARKER)  # markers last
        done: list[str] = []
        try:
            for key in files:
                self.fs.put_file(str(folder / key), f"{self.base}/{key}")
                done.append(key)
        except BaseException:
            for key in reversed(done):
                self._rm(f"{self.base}/{key}")
            raise
        return len(files)

    @_answering
    def verify(self, rel: str, sha256: str) -> bool:
        marker = self._committed(rel)
        return marker is not None and marker.get("sha256") == sha256

    @_answering
    def check(self) -> None:
        """Raise unless the local cache is writable and the bucket answers a listing with these
        credentials (a missing bucket: :class:`FileNotFoundError`)."""
        super().check()
        self.fs.invalidate_cache()
        self.fs.ls(self.base.split("/", 1)[0], detail=False)

    @_answering
    def remove(self, rel: str) -> None:
        """Uncommit first (the marker), then remove the files and the cached copy."""
        self._rm(self._key(rel, MARKER))
        self._rm(self._key(rel))
        super().remove(rel)

    @_answering
    def sweep(self, older_than: float = STALE_SECONDS) -> int:
        """Remove what dead writers left, untouched for ``older_than`` seconds (a live upload on
        another machine is younger): this machine's temporary folders, the store's temporary
        keys, and copies under a version's name that were never committed. A committed version
        is never touched. Returns how many leftovers were removed."""
        n = super().sweep(older_than)
        self.fs.invalidate_cache()
        now = time.time()

        def stale(infos: Iterable[dict[str, Any]]) -> bool:
            times = [_mtime(info) for info in infos]
            return all(t is not None and now - t > older_than for t in times)

        try:
            entries = self.fs.ls(f"{self.base}/.tmp", detail=False)
        except FileNotFoundError:
            entries = []
        for entry in entries:
            if stale(self.fs.find(entry, detail=True).values()):
                self._rm(entry)
                n += 1
        for key, info in self.fs.find(self.base, detail=True).items():
            if posixpath.basename(key) != COPYING or not stale([info]):
                continue
            folder = posixpath.dirname(key)
            if self.fs.exists(f"{folder}/{MARKER}"):  # committed, then killed before tidying
                self._rm(key)
            elif stale(self.fs.find(folder, detail=True).values()):
                self._rm(folder)
                n += 1
        return n


def _mtime(info: dict[str, Any]) -> float | None:
    value = info.get("LastModified") or info.get("mtime") or info.get("created")
    if value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    stamp = getattr(value, "timestamp", None)
    return float(stamp()) if callable(stamp) else None
