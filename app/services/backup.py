"""Backups of a data directory: the SQLite database (copied with SQLite's online backup API, so the
app may keep running) and the model artifacts, in one ``.tar.gz`` with a manifest of sha256
hashes and sizes. Restoring goes into an empty data directory only. The archive is read once, as
a stream, by :func:`core.safe_tar.extract_tar_verified`: safe names and plain files only, each
file refused from its header when the manifest does not list it, gives it another size, or it
would take the total past the free disk space (or ``max_bytes``), and stopped at its first byte
past a sha256 mismatch; so a small gzip bomb is refused before it fills the staging folder. The
database's ``PRAGMA integrity_check`` is verified before anything is moved into place.

The embedding cache and the job queue are not backed up: the first is rebuilt on demand, the
second holds only jobs in flight.
"""

from __future__ import annotations

import io
import json
import shutil
import tarfile
import tempfile
import uuid
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from core.safe_archive import ArchiveError, sha256_file
from core.safe_tar import Expected, extract_tar_verified
from storage.backup import integrity_check, snapshot_sqlite
from storage.errors import StorageError

FORMAT = 1
DB_NAME = "studio.db"
ARTIFACTS = "artifacts"
MANIFEST = "backup.json"
# A backup is the user's own data: no fixed size cap (the free disk space is the limit, less this
# headroom), a generous member cap.
MAX_MEMBERS = 1_000_000
DISK_HEADROOM_BYTES = 256 * 1024**2


def backup(db_path: Path, artifacts_dir: Path, out: Path) -> dict[str, object]:
    """Write ``out`` (.tar.gz) from a live database file and the artifacts folder.

    Returns:
        The manifest (format, created_at, files with their sha256).

    Raises:
        StorageError: no database at ``db_path``.
    """
    out = Path(out)
    with tempfile.TemporaryDirectory(prefix="intent-studio-backup-") as tmp:
        snapshot = Path(tmp) / DB_NAME
        snapshot_sqlite(db_path, snapshot)
        files: dict[str, Path] = {DB_NAME: snapshot}
        if artifacts_dir.is_dir():
            for p in sorted(artifacts_dir.rglob("*")):
                rel = p.relative_to(artifacts_dir)
                if p.is_file() and not p.is_symlink() and rel.parts[0] != ".tmp":
                    files[f"{ARTIFACTS}/{rel.as_posix()}"] = p
        manifest: dict[str, object] = {
            "format": FORMAT,
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "files": {name: sha256_file(p) for name, p in files.items()},
            "sizes": {name: p.stat().st_size for name, p in files.items()},
        }
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_name(f".{out.name}.{uuid.uuid4().hex}.tmp")
        try:
            with tarfile.open(partial, "w:gz") as tar:
                info = tarfile.TarInfo(MANIFEST)
                data = json.dumps(manifest, indent=2).encode("utf-8")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
                for name, p in files.items():
                    tar.add(p, arcname=name, recursive=False)
            partial.replace(out)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
    return manifest


def _expected_file(name: str) -> None:
    """A backup holds the database, the manifest and files under ``artifacts/`` only."""
    if PurePosixPath(name).parts[0] not in (DB_NAME, ARTIFACTS, MANIFEST):
        raise StorageError(f"The backup holds an unexpected file {name!r}; nothing was restored.")


def _read_manifest(data: bytes) -> tuple[dict[str, object], dict[str, Expected]]:
    """The backup's manifest (its first file), and its files as ``{path: Expected}``; a backup
    written before sizes were recorded has hashes only."""
    try:
        manifest = json.loads(data)
        if not isinstance(manifest, dict):
            raise ValueError("not an object")
        if manifest.get("format") != FORMAT:
            raise StorageError(f"Unknown backup format {manifest.get('format')!r}.")
        sizes = manifest.get("sizes") or {}
        table = {
            str(name): Expected(str(digest), int(sizes[name]) if name in sizes else None)
            for name, digest in manifest["files"].items()
        }
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise StorageError(f"The backup's {MANIFEST} is unreadable: {exc}.") from exc
    if DB_NAME not in table:
        raise StorageError(f"The backup does not match its manifest: it lists no {DB_NAME}.")
    return manifest, table


def restore(archive: Path, data_dir: Path, *, max_bytes: int | None = None) -> dict[str, object]:
    """Restore ``archive`` into ``data_dir``, which must be empty or absent.

    Args:
        archive: a ``.tar.gz`` written by :func:`backup`.
        data_dir: the new data directory.
        max_bytes: refuse an archive whose files add up to more (None: the free disk space
            beside ``data_dir``, less :data:`DISK_HEADROOM_BYTES`).

    Returns:
        The backup's manifest.

    Raises:
        StorageError: the directory is not empty, the archive is not a backup of ours (or is
            hostile, or over ``max_bytes``), a file is missing, unexpected or changed, or the
            database fails its integrity check. Nothing is left in ``data_dir`` or beside it in
            that case.
    """
    archive, data_dir = Path(archive), Path(data_dir)
    if data_dir.exists() and any(data_dir.iterdir()):
        raise StorageError(f"{data_dir} is not empty: restore only into a new data directory.")
    if not archive.is_file():
        raise StorageError(f"No backup at {archive}.")
    parent = data_dir.parent
    parent.mkdir(parents=True, exist_ok=True)
    if max_bytes is None:
        max_bytes = max(shutil.disk_usage(parent).free - DISK_HEADROOM_BYTES, 0)
    staging = Path(tempfile.mkdtemp(prefix=".restore-", dir=parent))
    manifest: dict[str, object] = {}

    def read_index(data: bytes) -> dict[str, Expected]:
        doc, table = _read_manifest(data)
        manifest.update(doc)
        return table

    try:
        try:
            extract_tar_verified(
                archive,
                staging,
                index=MANIFEST,
                read_index=read_index,
                max_bytes=max_bytes,
                max_members=MAX_MEMBERS,
                check_file=_expected_file,
            )
        except ArchiveError as exc:
            raise StorageError(f"{exc} Nothing was restored.") from exc
        verdict = integrity_check(staging / DB_NAME)
        if verdict != "ok":
            raise StorageError(f"The backed-up database fails its integrity check: {verdict}.")
        if data_dir.exists():
            data_dir.rmdir()
        staging.replace(data_dir)
        return manifest
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
