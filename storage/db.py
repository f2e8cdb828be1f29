"""Engine and session creation. SQLite gets WAL, foreign keys and a busy timeout; any SQLAlchemy
URL works (PostgreSQL for a team). The schema is brought up to date by Alembic on open.

Two kinds of transaction: :meth:`Database.session` (reads, and writes that do not read first) and
:meth:`Database.write` (read-then-write changes such as labelling). On SQLite a ``write`` takes the
write lock when it begins (``BEGIN IMMEDIATE``), so two people saving at once queue up for the
busy timeout instead of one failing at once with "database is locked" when its read snapshot went
stale. On PostgreSQL a ``write`` takes one transaction-scoped advisory lock first, the same
one-writer-at-a-time rule across every process and machine sharing the database (rows are still
versioned, and the job claim is an atomic ``UPDATE … WHERE status = 'queued'`` on both). A lock still
held past the timeout becomes :class:`~storage.errors.BusyError`, a message for people, never raw
SQL. SQLite's pragmas and its ``BEGIN IMMEDIATE`` apply to SQLite only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from storage.errors import BusyError, DatabaseUnavailable, ReadOnlyError

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
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


IMMEDIATE = "sqlite_begin_immediate"


def _on_sqlite_begin(conn: Any) -> None:
    immediate = conn.get_execution_options().get(IMMEDIATE)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


# The key of PostgreSQL's advisory lock that serialises read-then-write transactions ("IS" in hex).
WRITE_LOCK_KEY = 0x4953
MIGRATE_LOCK_KEY = WRITE_LOCK_KEY + 1


def _postgres_write_lock(busy_timeout: float) -> Callable[[Any], None]:
    """A ``begin`` hook: a ``write`` transaction waits up to ``busy_timeout`` s for the lock."""
    timeout_ms = max(1, int(busy_timeout * 1000))

    def on_begin(conn: Any) -> None:
        if conn.get_execution_options().get(IMMEDIATE):
            conn.exec_driver_sql(f"SET LOCAL lock_timeout = {timeout_ms}")
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({WRITE_LOCK_KEY})")

    return on_begin


_read_only: ContextVar[str | None] = ContextVar("storage_read_only", default=None)
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER")


@contextmanager
def read_only(reason: str) -> Iterator[None]:
    """Within the block (this thread or task), any statement that would change the database
    raises :class:`~storage.errors.ReadOnlyError` with ``reason`` before it reaches the database:
    the app runs a viewer's requests this way, so a write path nobody thought to guard is refused
    all the same.

    Example:
        >>> db = Database("sqlite://")
        >>> from storage.projects import create_project
        >>> with read_only("viewers only read"), db.session() as s:
        ...     create_project(s, "demo")
        Traceback (most recent call last):
        ...
        storage.errors.ReadOnlyError: viewers only read
    """
    token = _read_only.set(reason)
    try:
        yield
    finally:
        _read_only.reset(token)


def _refuse_writes(
    _conn: Any, _cursor: Any, statement: str, _params: Any, _context: Any, _many: bool
) -> None:
    reason = _read_only.get()
    if reason and statement.lstrip()[:8].upper().startswith(_WRITES):
        raise ReadOnlyError(reason)


BUSY_TIMEOUT = 15.0  # seconds a SQLite transaction waits for another writer's lock


def make_engine(url: str, *, busy_timeout: float = BUSY_TIMEOUT) -> Engine:
    """Create an engine; for SQLite, configure WAL, foreign keys, explicit transactions and how
    long to wait for another writer's lock (``busy_timeout`` seconds)."""
    if url.startswith("sqlite"):
        engine = create_engine(
            url, connect_args={"timeout": busy_timeout, "check_same_thread": False}
        )
        event.listen(engine, "connect", _on_sqlite_connect)
        event.listen(engine, "begin", _on_sqlite_begin)
    else:
        # a server that does not answer: refused after 10 s (a request answers 503), not hung
        args = {"connect_timeout": 10} if url.startswith("postgresql") else {}
        engine = create_engine(url, pool_pre_ping=True, connect_args=args)
        if engine.dialect.name == "postgresql":
            event.listen(engine, "begin", _postgres_write_lock(busy_timeout))
    event.listen(engine, "before_cursor_execute", _refuse_writes)
    return engine


def migrate(engine: Engine) -> None:
    """Apply all Alembic migrations up to head (idempotent)."""
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False))
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":  # two processes starting at once migrate in turn
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATE_LOCK_KEY})")
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


# PostgreSQL's answers that mean "not now" rather than "not this": class 08 (connection
# exception) and 57P01-57P03 (shut down by an administrator, after a crash, starting up).
_UNAVAILABLE_STATES = ("08", "57P01", "57P02", "57P03")


def unavailable(exc: DBAPIError) -> bool:
    """Whether ``exc`` says the database cannot be reached (rather than refusing a statement):
    a connection lost or refused (the driver had no answer from a server: no SQLSTATE), or a
    server shutting down or starting up.

    Example:
        >>> unavailable(OperationalError("SELECT 1", {}, Exception("no such table: x")))
        False
    """
    if exc.connection_invalidated:
        return True
    code = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
    if code is None:  # psycopg's own failures (refused, reset, timed out) carry no SQLSTATE
        return type(exc.orig).__module__.startswith("psycopg") and isinstance(exc, OperationalError)
    return str(code).startswith(_UNAVAILABLE_STATES)


@contextmanager
def _busy_as_message() -> Iterator[None]:
    try:
        yield
    except DBAPIError as exc:
        if unavailable(exc):
            logger.warning("The database does not answer: %s", exc.orig)
            raise DatabaseUnavailable() from exc
        if not isinstance(exc, OperationalError):
            raise
        # SQLite: "database is locked"; PostgreSQL: lock_not_available (55P03) past lock_timeout.
        pgcode = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
        if "locked" in str(exc.orig) or "busy" in str(exc.orig) or pgcode == "55P03":
            raise BusyError(
                "The database is busy with another change (an import or someone else's save); "
                "nothing was changed. Try again in a moment."
            ) from exc
        raise


class Database:
    """An engine plus a session factory. ``with db.session() as s:`` is one transaction that commits
    on success and rolls back on any exception."""

    def __init__(
        self,
        url: str,
        *,
        apply_migrations: bool = True,
        busy_timeout: float = BUSY_TIMEOUT,
        max_intents: int | None = None,
    ) -> None:
        """``max_intents``: the intents a project may have (None: the default of
        :data:`storage.projects.DEFAULT_MAX_INTENTS`), carried in every session's ``info``."""
        self.url = url
        self.engine = make_engine(url, busy_timeout=busy_timeout)
        if apply_migrations:
            migrate(self.engine)
        info = {} if max_intents is None else {"max_intents": max_intents}
        self._factory = sessionmaker(self.engine, expire_on_commit=False, info=info)
        writer = self.engine.execution_options(**{IMMEDIATE: True})
        self._write_factory = sessionmaker(writer, expire_on_commit=False, info=info)

    @contextmanager
    def session(self) -> Iterator[Session]:
        with _busy_as_message(), self._factory() as s, s.begin():
            yield s

    @contextmanager
    def reading(self) -> Iterator[Connection]:
        """A bare connection for one read on a hot path (no ORM session: 0.7 ms less a call);
        for reads through Core statements such as :func:`storage.pool_state.pool_stamp`."""
        with _busy_as_message(), self.engine.connect() as c:
            yield c

    def ping(self) -> bool:
        """Whether the database answers a query now (for a health check; why not is logged)."""
        try:
            with self.engine.connect() as c:
                c.execute(text("SELECT 1"))
        except Exception:  # a health check reports any failure, it does not raise
            logger.warning("The database does not answer", exc_info=True)
            return False
        return True

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A transaction that reads and then writes: it holds the write lock from its start."""
        with _busy_as_message(), self._write_factory() as s, s.begin():
            yield s

    def dispose(self) -> None:
        self.engine.dispose()
