"""Backups of a data directory: the SQLite database (copied with SQLite's online backup API, so the
app may keep running) and the model artifacts, in one ``.tar.gz`` with a manifest of sha256
hashes. Restoring goes into an empty data directory only; the archive is checked by
:mod:`core.safe_archive` (safe names, plain files only), every hash and the database's
``PRAGMA integrity_check`` are verified before anything is moved into place.

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

from core.safe_archive import ArchiveError, diff_manifest, extract_tar, sha256_file
from storage.backup import integrity_check, snapshot_sqlite
from storage.errors import StorageError

FORMAT = 1
DB_NAME = "studio.db"
ARTIFACTS = "artifacts"
MANIFEST = "backup.json"
# A backup is the user's own data: no size cap (the disk is the limit), a generous member cap.
MAX_MEMBERS = 1_000_000


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


def _verify(staging: Path) -> dict[str, object]:
    """The manifest of an extracted backup, once every file and the database check out."""
    manifest_path = staging / MANIFEST
    if not manifest_path.is_file():
        raise StorageError("The backup has no backup.json: not an Intent Studio backup.")
    manifest = json.loads(manifest_path.read_text("utf-8"))
    if manifest.get("format") != FORMAT:
        raise StorageError(f"Unknown backup format {manifest.get('format')!r}.")
    diff = diff_manifest(staging, manifest["files"], ignore=[MANIFEST])
    if diff.missing or diff.extra:
        raise StorageError(
            f"The backup does not match its manifest (extra {diff.extra}, missing {diff.missing})."
        )
    for name in diff.changed:
        raise StorageError(f"{name} in the backup is damaged (sha256 mismatch).")
    verdict = integrity_check(staging / DB_NAME)
    if verdict != "ok":
        raise StorageError(f"The backed-up database fails its integrity check: {verdict}.")
    return dict(manifest)


def restore(archive: Path, data_dir: Path) -> dict[str, object]:
    """Restore ``archive`` into ``data_dir``, which must be empty or absent.

    Returns:
        The backup's manifest.

    Raises:
        StorageError: the directory is not empty, the archive is not a backup of ours (or is
            hostile), a file is missing, unexpected or changed, or the database fails its
            integrity check. Nothing is left in ``data_dir`` in that case.
    """
    archive, data_dir = Path(archive), Path(data_dir)
    if data_dir.exists() and any(data_dir.iterdir()):
        raise StorageError(f"{data_dir} is not empty: restore only into a new data directory.")
    if not archive.is_file():
        raise StorageError(f"No backup at {archive}.")
    parent = data_dir.parent
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".restore-", dir=parent))
    try:
        try:
            extract_tar(
                archive,
                staging,
                max_bytes=None,
                max_members=MAX_MEMBERS,
                check_file=_expected_file,
            )
            manifest = _verify(staging)
        except ArchiveError as exc:
            raise StorageError(f"{exc} Nothing was restored.") from exc
        (staging / MANIFEST).unlink()
        if data_dir.exists():
            data_dir.rmdir()
        staging.replace(data_dir)
        return manifest
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
