"""Database-level primitives of a backup: a consistent copy of a live SQLite file and its
integrity check; for PostgreSQL, ``pg_dump`` and ``pg_restore`` (Debian's ``postgresql-client``,
the newest installed: it must be at least the server's version) and whether a database is empty.
The archive around them (manifest, hashes, safe extraction) is :mod:`app.services.projects.backup`'s.
"""

from __future__ import annotations

import glob
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

from storage.errors import StorageError


def snapshot_sqlite(db_path: Path, dest: Path) -> None:
    """Copy the SQLite database at ``db_path`` to ``dest`` with SQLite's online backup API.

    The copy is consistent even while the app keeps writing.

    Raises:
        StorageError: no database file at ``db_path``.

    Example:
        >>> import tempfile
        >>> tmp = Path(tempfile.mkdtemp())
        >>> sqlite3.connect(tmp / "a.db").execute("CREATE TABLE t (x)").connection.commit()
        >>> snapshot_sqlite(tmp / "a.db", tmp / "b.db"); integrity_check(tmp / "b.db")
        'ok'
    """
    if not Path(db_path).is_file():
        raise StorageError(f"No database at {db_path}.")
    src = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    dst = sqlite3.connect(dest)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


def integrity_check(db_path: Path) -> str:
    """SQLite's ``PRAGMA integrity_check`` verdict for a database file: ``"ok"`` when sound,
    else what is wrong (a file SQLite cannot open at all says so instead of raising)."""
    con = sqlite3.connect(db_path)
    try:
        return str(con.execute("PRAGMA integrity_check").fetchone()[0])
    except sqlite3.DatabaseError as exc:
        return str(exc)
    finally:
        con.close()


# --- PostgreSQL -----------------------------------------------------------------------------


def is_postgres(url: str) -> bool:
    return url.startswith(("postgresql", "postgres:"))


def _program(name: str) -> str:
    """The newest installed ``pg_dump``/``pg_restore`` (Debian keeps one per version)."""
    versions = sorted(
        glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    found = versions[-1] if versions else shutil.which(name)
    if found is None:
        raise StorageError(
            f"{name} is not installed: install PostgreSQL's client programs "
            "(Debian: apt-get install postgresql-client) of the server's version or newer."
        )
    return found


def _libpq(url: str) -> tuple[str, dict[str, str]]:
    """A SQLAlchemy URL as libpq takes it: the URI without its password, and the password in
    ``PGPASSWORD`` (never on a command line, where ``ps`` shows it)."""
    from sqlalchemy.engine import make_url

    u = make_url(url)
    env = {"PGPASSWORD": u.password} if u.password else {}
    uri = u.set(drivername="postgresql", password=None).render_as_string(hide_password=False)
    return uri, env


def _run(args: list[str], env: dict[str, str], what: str) -> str:
    done = subprocess.run(
        args, env={**os.environ, **env}, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise StorageError(f"{what} failed: {' '.join(tail) or f'exit {done.returncode}'}")
    return done.stdout


def pg_dump(url: str, dest: Path) -> None:
    """A consistent dump of the PostgreSQL database at ``url`` (one snapshot, while the app
    runs) into ``dest``, in pg_dump's custom format, without owners or grants (a restore runs as
    whoever restores)."""
    uri, env = _libpq(url)
    args = [_program("pg_dump"), "--format=custom", "--no-owner", "--no-privileges"]
    _run([*args, f"--file={dest}", f"--dbname={uri}"], env, "pg_dump")


def check_dump(dump: Path) -> None:
    """Raise :class:`StorageError` unless ``dump`` is an archive ``pg_restore`` can read."""
    _run([_program("pg_restore"), "--list", str(dump)], {}, "Reading the database dump")


def pg_restore(dump: Path, url: str) -> None:
    """Restore ``dump`` into the (empty) database at ``url`` in one transaction: all of it, or
    nothing."""
    uri, env = _libpq(url)
    args = [_program("pg_restore"), "--no-owner", "--no-privileges", "--exit-on-error"]
    _run([*args, "--single-transaction", f"--dbname={uri}", str(dump)], env, "pg_restore")


def tables_in(url: str) -> list[str]:
    """The tables of the database at ``url`` (an empty list: nothing there to overwrite)."""
    from sqlalchemy import create_engine, inspect

    engine = create_engine(url)
    try:
        return sorted(inspect(engine).get_table_names())
    finally:
        engine.dispose()
