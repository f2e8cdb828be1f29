"""The database side of a backup: a consistent snapshot of a live SQLite file, and its check."""

from __future__ import annotations

import sqlite3

import pytest

from storage.backup import integrity_check, snapshot_sqlite
from storage.errors import StorageError


def test_a_snapshot_holds_what_was_committed_while_the_source_stays_open(tmp_path):
    src = sqlite3.connect(tmp_path / "live.db")
    src.execute("CREATE TABLE t (x)")
    src.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(100)])
    src.commit()
    src.execute("INSERT INTO t VALUES (-1)")  # not committed: not in the snapshot
    snapshot_sqlite(tmp_path / "live.db", tmp_path / "copy.db")
    src.close()
    copy = sqlite3.connect(tmp_path / "copy.db")
    assert copy.execute("SELECT count(*), min(x) FROM t").fetchone() == (100, 0)
    copy.close()
    assert integrity_check(tmp_path / "copy.db") == "ok"


def test_no_database_is_refused(tmp_path):
    with pytest.raises(StorageError, match="No database"):
        snapshot_sqlite(tmp_path / "absent.db", tmp_path / "copy.db")


def test_a_damaged_database_fails_its_check(tmp_path):
    db = tmp_path / "d.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (x TEXT)")
    con.execute("CREATE INDEX ix ON t (x)")
    con.executemany("INSERT INTO t VALUES (?)", [(f"row {i}" * 20,) for i in range(500)])
    con.commit()
    con.close()
    raw = bytearray(db.read_bytes())
    page = 4096
    for offset in range(2 * page + 100, len(raw), page):  # scribble on every page but the first two
        raw[offset : offset + 64] = b"\xff" * 64
    db.write_bytes(bytes(raw))
    assert integrity_check(db) != "ok"


def test_a_file_that_is_no_database_fails_its_check_without_raising(tmp_path):
    (tmp_path / "junk.db").write_bytes(b"this is not a database, just bytes" * 200)
    assert "not a database" in integrity_check(tmp_path / "junk.db")
