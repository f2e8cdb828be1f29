"""Backups of a data directory: the SQLite database (copied with SQLite's online backup API, so the
app may keep running) and the model artifacts, in one ``.tar.gz`` with a manifest of sha256
hashes. Restoring goes into an empty data directory only, checks every hash and the database's
``PRAGMA integrity_check`` before anything is moved into place.

The embedding cache and the job queue are not backed up: the first is rebuilt on demand, the
second holds only jobs in flight.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import sqlite3
import tarfile
import tempfile
import uuid
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from storage.errors import StorageError

FORMAT = 1
DB_NAME = "studio.db"
ARTIFACTS = "artifacts"
MANIFEST = "backup.json"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def backup(db_path: Path, artifacts_dir: Path, out: Path) -> dict[str, object]:
    """Write ``out`` (.tar.gz) from a live database file and the artifacts folder.

    Returns the manifest (format, created_at, files with their sha256).
    """
    out = Path(out)
    if not db_path.is_file():
        raise StorageError(f"No database at {db_path}.")
    with tempfile.TemporaryDirectory(prefix="intent-studio-backup-") as tmp:
        snapshot = Path(tmp) / DB_NAME
        src = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
        dst = sqlite3.connect(snapshot)
        try:
            src.backup(dst)  # a consistent copy, even while the app writes
        finally:
            dst.close()
            src.close()
        files: dict[str, Path] = {DB_NAME: snapshot}
        if artifacts_dir.is_dir():
            for p in sorted(artifacts_dir.rglob("*")):
                rel = p.relative_to(artifacts_dir)
                if p.is_file() and not p.is_symlink() and rel.parts[0] != ".tmp":
                    files[f"{ARTIFACTS}/{rel.as_posix()}"] = p
        manifest: dict[str, object] = {
            "format": FORMAT,
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "files": {name: _sha256(p) for name, p in files.items()},
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


def _safe_name(name: str) -> str:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise StorageError(f"The backup holds an unsafe path {name!r}; nothing was restored.")
    if path.parts[0] not in (DB_NAME, ARTIFACTS, MANIFEST):
        raise StorageError(f"The backup holds an unexpected file {name!r}; nothing was restored.")
    return name


def restore(archive: Path, data_dir: Path) -> dict[str, object]:
    """Restore ``archive`` into ``data_dir``, which must be empty or absent.

    Raises:
        StorageError: the directory is not empty, the archive is not a backup of ours, a file is
            missing, unexpected or changed, or the database fails its integrity check. Nothing
            is left in ``data_dir`` in that case.
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
            tar = tarfile.open(archive, "r:gz")  # noqa: SIM115 - closed by the with below
        except (tarfile.TarError, OSError) as exc:
            raise StorageError(f"{archive.name} is not an Intent Studio backup: {exc}") from exc
        with tar:
            members = tar.getmembers()
            for m in members:
                _safe_name(m.name)
                if not m.isfile():
                    raise StorageError(f"The backup holds a non-file entry {m.name!r}.")
            tar.extractall(staging, filter="data")
        manifest_path = staging / MANIFEST
        if not manifest_path.is_file():
            raise StorageError("The backup has no backup.json: not an Intent Studio backup.")
        manifest = json.loads(manifest_path.read_text("utf-8"))
        if manifest.get("format") != FORMAT:
            raise StorageError(f"Unknown backup format {manifest.get('format')!r}.")
        expected: dict[str, str] = manifest["files"]
        present = {
            p.relative_to(staging).as_posix()
            for p in staging.rglob("*")
            if p.is_file() and p.name != MANIFEST
        }
        if present != set(expected):
            extra, missing = sorted(present - set(expected)), sorted(set(expected) - present)
            raise StorageError(
                f"The backup does not match its manifest (extra {extra}, missing {missing})."
            )
        for name, sha in expected.items():
            if _sha256(staging / name) != sha:
                raise StorageError(f"{name} in the backup is damaged (sha256 mismatch).")
        con = sqlite3.connect(staging / DB_NAME)
        try:
            verdict = con.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            con.close()
        if verdict != "ok":
            raise StorageError(f"The backed-up database fails its integrity check: {verdict}.")
        manifest_path.unlink()
        if data_dir.exists():
            data_dir.rmdir()
        staging.replace(data_dir)
        return manifest
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
