"""Database-level primitives of a backup: a consistent copy of a live SQLite file and its
integrity check. The archive around them (manifest, hashes, safe extraction) is
:mod:`app.services.backup`'s.
"""

from __future__ import annotations

import sqlite3
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
