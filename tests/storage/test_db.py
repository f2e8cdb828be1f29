"""The database: WAL and foreign keys on SQLite, migrations that can run twice, and read-then-write
transactions that queue up instead of losing an update, on SQLite and on PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from tests.storage.conftest import old_database


def test_the_schema_is_at_the_last_migration_and_sqlite_runs_in_wal_mode_with_foreign_keys(db):
    with db.engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == "0018"
        if db.engine.dialect.name == "sqlite":
            assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
            assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1


def test_a_database_of_the_first_schema_is_upgraded_with_its_data(tmp_path):
    """A user's existing database (schema 0001) opens: the audit log gains its indexes."""
    from sqlalchemy import inspect

    from storage.db import Database

    url = old_database(
        tmp_path / "old.db",
        "0001",
        "INSERT INTO projects (name, description, base_encoder, read_only, settings, created_at,"
        " version) VALUES ('old', '', 'minilm', 0, '{}', '2026-01-01', 1)",
    )
    db = Database(url)
    indexes = {i["name"] for i in inspect(db.engine).get_indexes("label_events")}
    assert {"ix_label_event_utterance", "ix_label_event_batch"} <= indexes
    with db.engine.connect() as conn:
        assert conn.execute(text("SELECT name FROM projects")).scalar() == "old"
    db.dispose()


def _schema_and_rows(db) -> dict[str, object]:
    """Every table's columns, indexes and row count, and the migration rows."""
    from sqlalchemy import inspect

    found: dict[str, object] = {}
    with db.engine.connect() as conn:
        schema = inspect(conn)
        for table in sorted(schema.get_table_names()):
            found[table] = (
                [c["name"] for c in schema.get_columns(table)],
                sorted(i["name"] or "" for i in schema.get_indexes(table)),
                conn.execute(text(f'SELECT COUNT(*) FROM "{table}"')).scalar(),
            )
        found["versions"] = conn.execute(text("SELECT version_num FROM alembic_version")).all()
    return found


def test_migrations_are_idempotent(tmp_path):
    """A second open runs the migrations again without failing and without duplicating
    anything: the same tables, columns, indexes and rows, one migration row."""
    from storage.db import Database, sqlite_url

    url = sqlite_url(tmp_path / "x.db")
    first = Database(url)
    before = _schema_and_rows(first)
    first.dispose()
    second = Database(url)
    after = _schema_and_rows(second)
    second.dispose()
    assert after == before
    assert len(after["versions"]) == 1  # type: ignore[arg-type]
    assert "utterances" in after and "alembic_version" in after


def test_a_database_at_the_newest_migration_opens_without_loading_alembic(tmp_path):
    """Every process (each CLI command) opens the database at its start; one already at the
    newest migration is not handed to Alembic (a few hundred ms to load it, to do nothing),
    and the newest migration it compares with is Alembic's own head."""
    import subprocess
    import sys

    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from storage.db import MIGRATIONS_DIR, Database, newest_migration, sqlite_url

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    assert ScriptDirectory.from_config(cfg).get_heads() == [newest_migration()]
    url = sqlite_url(tmp_path / "x.db")
    Database(url).dispose()  # a new database: migrated by Alembic
    code = (
        "import sys\nfrom storage.db import Database\n"
        f"Database({url!r}).dispose()\nprint('alembic' in sys.modules)"
    )
    opened = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert opened.stdout.strip() == "False", opened.stderr[-2000:]


def test_concurrent_read_then_write_changes_queue_up_instead_of_failing(db):
    """Ten writers that each read a counter and write it back: with write() every one lands (the
    write lock is taken at BEGIN: SQLite's BEGIN IMMEDIATE, PostgreSQL's advisory lock), none sees
    'database is locked', no update is lost."""
    import threading

    from storage.projects import create_project, get_project

    with db.session() as s:
        create_project(s, "p", description="0")
    errors: list[BaseException] = []

    def bump() -> None:
        try:
            with db.write() as s:
                p = get_project(s, "p")
                value = int(p.description)
                threading.Event().wait(0.02)  # a slow save: the others must wait, not fail
                p.description = str(value + 1)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=bump) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with db.session() as s:
        assert get_project(s, "p").description == "10"
    assert errors == []


def test_a_lock_held_past_the_timeout_is_a_message_not_sql(tmp_path):
    import sqlite3

    from storage.db import Database, sqlite_url
    from storage.errors import BusyError
    from storage.projects import create_project

    path = tmp_path / "b.db"
    db = Database(sqlite_url(path), busy_timeout=0.2)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        with (
            pytest.raises(BusyError, match="busy with another change") as info,
            db.write() as s,
        ):
            create_project(s, "q")
        assert "SQL" not in str(info.value) and "INSERT" not in str(info.value)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        db.dispose()


def test_a_write_lock_held_past_the_timeout_on_postgresql_is_a_message_not_sql(postgres):
    import psycopg

    from storage.db import WRITE_LOCK_KEY, Database
    from storage.errors import BusyError
    from storage.projects import create_project

    url = postgres.new_database()
    db = Database(url, busy_timeout=0.2)
    with psycopg.connect(url.replace("+psycopg", "")) as holder:
        holder.execute(f"SELECT pg_advisory_xact_lock({WRITE_LOCK_KEY})")  # another writer
        with pytest.raises(BusyError, match="busy with another change"), db.write() as s:
            create_project(s, "q")
    with db.session() as s:  # nothing was written, and the lock is free again
        from storage.projects import list_projects

        assert [p.name for p in list_projects(s)] == []
    db.dispose()


def test_the_read_only_guard_refuses_writes_on_postgresql_too(pg_db):
    from storage.db import read_only
    from storage.errors import ReadOnlyError
    from storage.projects import create_project, list_projects

    with (
        pytest.raises(ReadOnlyError, match="viewers only read"),
        read_only("viewers only read"),
        pg_db.session() as s,
    ):
        create_project(s, "demo")
    with pg_db.session() as s:
        assert list_projects(s) == []


def test_on_postgresql_a_projects_writers_take_turns_and_the_whole_database_waits_for_all(
    postgres,
):
    """Writers on PostgreSQL, each its own connection: while one holds project 1's lock, project
    2's writer and a job's row writer (no lock) go on, another of project 1's waits (busy past the
    timeout), and so does a writer of the whole database; while the whole database is held, a
    project's writer waits too. The accounts' lock is one more scope of its own."""
    from sqlalchemy import text

    from storage.db import ACCOUNTS, ROWS, Database, WriteLock
    from storage.errors import BusyError

    db = Database(postgres.new_database(), busy_timeout=0.3)

    def goes_on(lock: WriteLock) -> bool:
        try:
            with db.write(lock) as s:
                s.execute(text("SELECT 1"))
        except BusyError:
            return False
        return True

    with db.write(WriteLock.project(1)):  # holds project 1's lock from its start
        assert goes_on(WriteLock.project(2)) and goes_on(ROWS) and goes_on(ACCOUNTS)
        assert not goes_on(WriteLock.project(1))
        assert goes_on(WriteLock.project(3, accounts=True))  # project 3 and the accounts: free
        assert not goes_on(WriteLock.project(1, accounts=True))
        assert not goes_on(WriteLock(whole=True))
    with db.write():  # the default: the whole database
        assert not goes_on(WriteLock.project(2)) and not goes_on(ACCOUNTS)
        assert goes_on(ROWS)
    assert goes_on(WriteLock.project(1)) and goes_on(WriteLock(whole=True))
    db.dispose()
