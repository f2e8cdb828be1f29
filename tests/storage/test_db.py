"""The database: WAL and foreign keys on SQLite, migrations that can run twice."""

from __future__ import annotations

from sqlalchemy import text


def test_sqlite_runs_in_wal_mode_with_foreign_keys(db):
    with db.engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == "0001"


def test_migrations_are_idempotent(tmp_path):
    from storage.db import Database, sqlite_url

    url = sqlite_url(tmp_path / "x.db")
    Database(url).dispose()
    Database(url).dispose()  # second open must not fail or duplicate anything
