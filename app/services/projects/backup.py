"""Backups of a deployment: the database and the model files in one ``.tar.gz`` with a manifest
of sha256 hashes and sizes, whatever they live in (:func:`backup_deployment`,
:func:`restore_deployment`, what ``intent-studio backup`` and ``restore`` run):

- the database: SQLite copied with its online backup API, or PostgreSQL dumped with ``pg_dump``
  (one snapshot), so the app may keep running; restored into an empty data directory, or into an
  empty PostgreSQL database with ``pg_restore`` in one transaction;
- the model files: a local folder, or every committed version in a bucket (taken after the
  database, so every version the database names is there); restored into an empty folder, or an
  empty bucket prefix with each version's commit marker last.

The archive is read once, as a stream, by :func:`core.safe_tar.extract_tar_verified`: safe names
and plain files only, each file refused from its header when the manifest does not list it, gives
it another size, or it would take the total past the free disk space (or ``max_bytes``), and
stopped at its first byte past a sha256 mismatch; so a small gzip bomb is refused before it fills
the staging folder. The database is checked (SQLite's ``PRAGMA integrity_check``, ``pg_restore
--list``) before anything is written, and a restore that fails leaves the target as it was.

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
from typing import TYPE_CHECKING

from app.perimeter.private_data import FILE_MODE, make_private
from core.safe_archive import ArchiveError, sha256_file
from core.safe_tar import Expected, extract_tar_verified
from storage.backup import (
    check_dump,
    integrity_check,
    is_postgres,
    pg_dump,
    pg_restore,
    snapshot_sqlite,
    tables_in,
)
from storage.errors import StorageError
from storage.remote_artifacts import RemoteArtifactStore

if TYPE_CHECKING:
    from app.config import Settings

FORMAT = 1
DB_NAME = "studio.db"
PG_DUMP = "studio.pgdump"  # a PostgreSQL database, in pg_dump's custom format
ARTIFACTS = "artifacts"
MANIFEST = "backup.json"
# A backup is the user's own data: no fixed size cap (the free disk space is the limit, less this
# headroom), a generous member cap.
MAX_MEMBERS = 1_000_000
DISK_HEADROOM_BYTES = 256 * 1024**2


def backup(db_path: Path, artifacts_dir: Path, out: Path) -> dict[str, object]:
    """Write ``out`` (.tar.gz) from a live SQLite database file and the artifacts folder.

    Returns:
        The manifest (format, created_at, files with their sha256).

    Raises:
        StorageError: no database at ``db_path``.
    """
    with tempfile.TemporaryDirectory(prefix="intent-studio-backup-") as tmp:
        snapshot = Path(tmp) / DB_NAME
        snapshot_sqlite(db_path, snapshot)
        return _write(out, {DB_NAME: snapshot, **_local_files(artifacts_dir)}, "sqlite")


def backup_deployment(settings: Settings, out: Path) -> dict[str, object]:
    """Write ``out`` (.tar.gz) from the database and the model files ``settings`` name: SQLite
    or PostgreSQL, a folder or a bucket (see the module). The database goes first: every
    version it names is committed in the store by then.

    Raises:
        StorageError: a database of another kind, no database, ``pg_dump`` failing or missing.
    """
    url = settings.database_url
    with tempfile.TemporaryDirectory(prefix="intent-studio-backup-") as tmp:
        files: dict[str, Path] = {}
        if url.startswith(SQLITE):
            snapshot_sqlite(Path(url[len(SQLITE) :]), Path(tmp) / DB_NAME)
            files[DB_NAME], kind = Path(tmp) / DB_NAME, "sqlite"
        elif is_postgres(url):
            pg_dump(url, Path(tmp) / PG_DUMP)
            files[PG_DUMP], kind = Path(tmp) / PG_DUMP, "postgresql"
        else:
            raise StorageError("backup covers SQLite and PostgreSQL databases only.")
        store = settings.open_artifacts() if settings.artifacts_remote else None
        if isinstance(store, RemoteArtifactStore):
            for key in store.committed_keys():
                local = Path(tmp) / ARTIFACTS / key
                store.download(key, local)
                files[f"{ARTIFACTS}/{key}"] = local
        else:
            files.update(_local_files(settings.artifacts_dir))
        return _write(out, files, kind)


SQLITE = "sqlite:///"


def _local_files(artifacts_dir: Path) -> dict[str, Path]:
    """The files of a local artifacts folder by their archive name (its ``.tmp`` left out)."""
    files: dict[str, Path] = {}
    if artifacts_dir.is_dir():
        for p in sorted(artifacts_dir.rglob("*")):
            rel = p.relative_to(artifacts_dir)
            if p.is_file() and not p.is_symlink() and rel.parts[0] != ".tmp":
                files[f"{ARTIFACTS}/{rel.as_posix()}"] = p
    return files


def _write(out: Path, files: dict[str, Path], database: str) -> dict[str, object]:
    """The archive ``out``: the manifest first, then ``files`` (archive name -> file)."""
    out = Path(out)
    manifest: dict[str, object] = {
        "format": FORMAT,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "database": database,
        "files": {name: sha256_file(p) for name, p in files.items()},
        "sizes": {name: p.stat().st_size for name, p in files.items()},
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.{uuid.uuid4().hex}.tmp")
    try:
        partial.touch(mode=FILE_MODE, exist_ok=False)  # it holds the database: private at once
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
    if PurePosixPath(name).parts[0] not in (DB_NAME, PG_DUMP, ARTIFACTS, MANIFEST):
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
    database = _database_file(manifest)
    if database not in table:
        raise StorageError(f"The backup does not match its manifest: it lists no {database}.")
    return manifest, table


def _database_file(manifest: dict[str, object]) -> str:
    """The archive's database file: a backup made before PostgreSQL was covered is SQLite's."""
    return PG_DUMP if manifest.get("database") == "postgresql" else DB_NAME


def restore(archive: Path, data_dir: Path, *, max_bytes: int | None = None) -> dict[str, object]:
    """Restore ``archive`` (a SQLite deployment with local model files) into ``data_dir``,
    which must be empty or absent.

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
    data_dir = Path(data_dir)
    _empty_folder(data_dir, "data directory")
    staging, manifest = _extract(Path(archive), data_dir.parent, max_bytes)
    try:
        _check_database(staging, manifest, "sqlite")
        _into_folder(staging, data_dir)
        return manifest
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def restore_deployment(
    archive: Path, settings: Settings, *, max_bytes: int | None = None
) -> dict[str, object]:
    """Restore ``archive`` into the empty database and the empty model store ``settings``
    name (see the module): a SQLite backup into an empty data directory, a PostgreSQL one into
    a database without tables; the model files into an empty folder or bucket prefix. Every
    target is checked empty and the archive verified before anything is written; a failure
    half-way removes what was written.

    Raises:
        StorageError: a target is not empty, the backup's database is of another kind than the
            target's, or anything :func:`restore` refuses.
    """
    url = settings.database_url
    kind = "postgresql" if is_postgres(url) else "sqlite"
    if kind == "sqlite" and not url.startswith(SQLITE):
        raise StorageError("restore covers SQLite and PostgreSQL databases only.")
    store = settings.open_artifacts() if settings.artifacts_remote else None
    bucket = store if isinstance(store, RemoteArtifactStore) else None
    if kind == "sqlite":
        _empty_folder(settings.data_dir, "data directory", but={"cache", "downloads"})
    elif tables := tables_in(url):
        raise StorageError(
            f"The database to restore into is not empty ({len(tables)} tables, "
            f"{', '.join(tables[:3])}...): restore only into a new, empty database."
        )
    if bucket is not None and not bucket.is_empty():
        raise StorageError(
            f"{bucket.url} is not empty: restore the model files only into an empty bucket "
            "or prefix."
        )
    own_folder = bucket is None and (
        kind == "postgresql"
        or settings.artifacts_dir.resolve() != (settings.data_dir / ARTIFACTS).resolve()
    )
    if own_folder:
        _empty_folder(settings.artifacts_dir, "model folder")
    staging, manifest = _extract(Path(archive), settings.data_dir.parent, max_bytes)
    uploaded = False
    try:
        _check_database(staging, manifest, kind)
        if bucket is not None and (staging / ARTIFACTS).is_dir():
            bucket.upload_all(staging / ARTIFACTS)
            uploaded = True
            shutil.rmtree(staging / ARTIFACTS)
        if kind == "postgresql":
            pg_restore(staging / PG_DUMP, url)
        if own_folder and (staging / ARTIFACTS).is_dir():
            _into_folder(staging / ARTIFACTS, settings.artifacts_dir)
        if kind == "sqlite":
            for kept in ("cache", "downloads"):  # a box's own folders, rebuilt as needed
                shutil.rmtree(settings.data_dir / kept, ignore_errors=True)
            _into_folder(staging, settings.data_dir)
        return manifest
    except BaseException:
        if uploaded and bucket is not None:
            bucket.remove_all()  # it was empty
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _empty_folder(folder: Path, what: str, *, but: frozenset[str] | set[str] = frozenset()) -> None:
    if folder.exists() and any(p.name not in but for p in folder.iterdir()):
        raise StorageError(f"{folder} is not empty: restore only into a new {what}.")


def _extract(archive: Path, parent: Path, max_bytes: int | None) -> tuple[Path, dict[str, object]]:
    """The archive verified into a staging folder in ``parent`` (the caller removes it), and
    its manifest; nothing is left behind on an error."""
    if not archive.is_file():
        raise StorageError(f"No backup at {archive}.")
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
        extract_tar_verified(
            archive,
            staging,
            index=MANIFEST,
            read_index=read_index,
            max_bytes=max_bytes,
            max_members=MAX_MEMBERS,
            check_file=_expected_file,
        )
        make_private(staging)  # the database and model files, the app's account's alone
    except ArchiveError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise StorageError(f"{exc} Nothing was restored.") from exc
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return staging, manifest


def _check_database(staging: Path, manifest: dict[str, object], kind: str) -> None:
    """The backup's database is of the target's ``kind`` and reads whole."""
    database = _database_file(manifest)
    if (database == PG_DUMP) != (kind == "postgresql"):
        held = "a PostgreSQL database" if database == PG_DUMP else "a SQLite database"
        where = (
            "INTENT_STUDIO_DB_URL naming an empty PostgreSQL database"
            if database == PG_DUMP
            else "INTENT_STUDIO_DB_URL unset (a new data directory)"
        )
        raise StorageError(f"This backup holds {held}: restore it with {where}.")
    if database == PG_DUMP:
        check_dump(staging / PG_DUMP)
        return
    verdict = integrity_check(staging / DB_NAME)
    if verdict != "ok":
        raise StorageError(f"The backed-up database fails its integrity check: {verdict}.")


def _into_folder(source: Path, folder: Path) -> None:
    """Move ``source`` into place as ``folder`` (which is empty or absent)."""
    if folder.exists():
        for p in folder.iterdir():  # empty but for a box's own folders
            shutil.rmtree(p) if p.is_dir() else p.unlink()
        folder.rmdir()
    folder.parent.mkdir(parents=True, exist_ok=True)
    source.replace(folder)
