"""Engine and session creation. SQLite gets WAL, foreign keys and a busy timeout; any SQLAlchemy
URL works (PostgreSQL for a team). The schema is brought up to date by Alembic on open."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

logger = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"


def sqlite_url(path: str | Path) -> str:
    return f"sqlite:///{Path(path).resolve()}"


def _on_sqlite_connect(dbapi_conn: Any, _record: Any) -> None:
    # Python's sqlite3 opens implicit transactions lazily; let SQLAlchemy emit BEGIN itself so a
    # whole import is one real transaction.
    dbapi_conn.isolation_level = None
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=15000")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def _on_sqlite_begin(conn: Any) -> None:
    conn.exec_driver_sql("BEGIN")


def make_engine(url: str) -> Engine:
    """Create an engine; for SQLite, configure WAL, foreign keys and explicit transactions."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 15, "check_same_thread": False})
        event.listen(engine, "connect", _on_sqlite_connect)
        event.listen(engine, "begin", _on_sqlite_begin)
    else:
        engine = create_engine(url, pool_pre_ping=True)
    return engine


def migrate(engine: Engine) -> None:
    """Apply all Alembic migrations up to head (idempotent)."""
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


class Database:
    """An engine plus a session factory. ``with db.session() as s:`` is one transaction that commits
    on success and rolls back on any exception."""

    def __init__(self, url: str, *, apply_migrations: bool = True) -> None:
        self.url = url
        self.engine = make_engine(url)
        if apply_migrations:
            migrate(self.engine)
        self._factory = sessionmaker(self.engine, expire_on_commit=False)

    @contextmanager
    def session(self) -> Iterator[Session]:
        with self._factory() as s, s.begin():
            yield s

    def dispose(self) -> None:
        self.engine.dispose()
