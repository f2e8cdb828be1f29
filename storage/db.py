"""Engine and session creation. SQLite gets WAL, foreign keys and a busy timeout; any SQLAlchemy
URL works (PostgreSQL for a team). The schema is brought up to date by Alembic on open.

Two kinds of transaction: :meth:`Database.session` (reads, and writes that do not read first) and
:meth:`Database.write` (read-then-write changes such as labelling). On SQLite a ``write`` takes the
write lock when it begins (``BEGIN IMMEDIATE``), so two people saving at once queue up for the
busy timeout instead of one failing at once with "database is locked" when its read snapshot went
stale. On PostgreSQL a ``write`` first takes the transaction-scoped advisory locks its
:class:`WriteLock` names, across every process and machine sharing the database: one project's
(:meth:`WriteLock.project`: its writers take turns, another project's go on), the accounts', the
project list's, none (:data:`ROWS`: a job's heartbeat, which locks its own row), or the whole
database's (:data:`WHOLE`, the default: every scoped writer holds it shared, so it waits for them
all and they for it). Rows are still versioned, and the job claim is an atomic ``UPDATE … WHERE
status = 'queued'`` on both. A lock still held past the timeout becomes
:class:`~storage.errors.BusyError`, a message for people, never raw SQL. SQLite's pragmas and its
``BEGIN IMMEDIATE`` apply to SQLite only (one writer at a time, whatever the lock says).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from storage import guard
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


# The key of PostgreSQL's advisory lock of the whole database ("IS" in hex): a WHOLE write holds it
# alone, a scoped one shares it. The scoped keys are pairs (WRITE_LOCK_KEY, n): a project's id, or
# one of the negative keys below (PostgreSQL's one-key and two-key locks never overlap).
WRITE_LOCK_KEY = 0x4953
MIGRATE_LOCK_KEY = WRITE_LOCK_KEY + 1
_ACCOUNTS_KEY, _CATALOG_KEY = -1, -2


@dataclass(frozen=True)
class WriteLock:
    """What a :meth:`Database.write` transaction keeps other writers out of, on PostgreSQL (SQLite
    has one writer at a time whatever it says). ``keys``: the scopes it holds alone (a project's
    id, or the accounts' or project list's negative key); ``whole``: the whole database alone;
    neither: no advisory lock at all, the rows it changes lock themselves (``SELECT … FOR
    UPDATE``).

    Example:
        >>> WriteLock.project(7).sql
        'SELECT pg_advisory_xact_lock_shared(18771), pg_advisory_xact_lock(18771, 7)'
        >>> WHOLE.sql, ROWS.sql
        ('SELECT pg_advisory_xact_lock(18771)', None)
        >>> WriteLock.project(7, accounts=True).keys
        (-1, 7)
    """

    keys: tuple[int, ...] = ()
    whole: bool = False

    @classmethod
    def project(cls, project_id: int, *, accounts: bool = False) -> WriteLock:
        """One project's changes (its rows, versions, jobs, members); ``accounts``: and the
        accounts' (a change that reads a user's role to decide, such as a membership)."""
        return cls(tuple(sorted({project_id, *((_ACCOUNTS_KEY,) if accounts else ())})))

    @property
    def sql(self) -> str | None:
        """The statement that takes the locks, in one order (no two writers wait on each other
        in a cycle), or None when there are none to take."""
        if self.whole:
            return f"SELECT pg_advisory_xact_lock({WRITE_LOCK_KEY})"
        if not self.keys:
            return None
        scoped = ", ".join(f"pg_advisory_xact_lock({WRITE_LOCK_KEY}, {k})" for k in self.keys)
        return f"SELECT pg_advisory_xact_lock_shared({WRITE_LOCK_KEY}), {scoped}"


WHOLE = WriteLock(whole=True)  # every other writer waits (and it for them): the default
ROWS = WriteLock()  # no advisory lock: a change of rows that lock themselves (a job's row)
ACCOUNTS = WriteLock((_ACCOUNTS_KEY,))  # users: their status, role, password, token
CATALOG = WriteLock((_CATALOG_KEY,))  # the list of projects: one being created


def _postgres_write_timeout(busy_timeout: float) -> Callable[[Any], None]:
    """A ``begin`` hook: a ``write`` transaction waits up to ``busy_timeout`` s for any lock (its
    advisory locks, a row another transaction holds)."""
    timeout_ms = max(1, int(busy_timeout * 1000))

    def on_begin(conn: Any) -> None:
        if conn.get_execution_options().get(IMMEDIATE):
            conn.exec_driver_sql(f"SET LOCAL lock_timeout = {timeout_ms}")

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
            event.listen(engine, "begin", _postgres_write_timeout(busy_timeout))
    event.listen(engine, "before_cursor_execute", _refuse_writes)
    return engine


def newest_migration() -> str:
    """The newest migration's revision: each is named by its file's number (``0012_....py``
    is revision ``"0012"``, a line of them; ``tests/storage/test_db.py`` holds it to Alembic's
    own head)."""
    numbers = (f.name[:4] for f in (MIGRATIONS_DIR / "versions").glob("[0-9]*.py"))
    return max((n for n in numbers if n.isdigit()), default="")


def at_newest(engine: Engine) -> bool:
    """Whether the database already stands at the newest migration: one small read, where
    Alembic would take a few hundred milliseconds to load itself and find nothing to do (every
    process opens the database at its start: a CLI command pays it each time)."""
    try:
        with engine.connect() as conn:
            found = conn.exec_driver_sql("SELECT version_num FROM alembic_version").all()
    except DBAPIError:  # no table yet: a new database
        return False
    return [tuple(r) for r in found] == [(newest_migration(),)]


def migrate(engine: Engine) -> None:
    """Apply all Alembic migrations up to head (idempotent; Alembic is not even loaded when the
    database is already at the newest, :func:`at_newest`)."""
    if at_newest(engine):
        return
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
        # SQLite: "database is locked"; PostgreSQL: lock_not_available (55P03) past lock_timeout,
        # or deadlock_detected (40P01: two writers each held a row the other wanted).
        pgcode = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
        if "locked" in str(exc.orig) or "busy" in str(exc.orig) or pgcode in ("55P03", "40P01"):
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
        max_rows: int | None = None,
        trusted: bool = False,
    ) -> None:
        """``max_intents``: the intents a project may have (None: the default of
        :data:`storage.capacity.DEFAULT_MAX_INTENTS`), ``max_rows`` the utterances (None:
        :data:`storage.capacity.DEFAULT_MAX_ROWS`), carried in every session's ``info``.
        ``trusted``: every session may change any item, as no user (:func:`storage.guard.trusted`:
        storage's own tests, a bench); else a session that changes an item needs the app's rule
        installed (:func:`app.access.writing`)."""
        self.url = url
        self.engine = make_engine(url, busy_timeout=busy_timeout)
        if apply_migrations:
            migrate(self.engine)
        info: dict[str, Any] = {
            key: value
            for key, value in (("max_intents", max_intents), ("max_rows", max_rows))
            if value is not None
        }
        if trusted:
            info[guard.KEY] = guard.TRUSTED
        self._factory = sessionmaker(self.engine, expire_on_commit=False, info=info)
        self._locks = self.engine.dialect.name == "postgresql"  # advisory locks to take
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
    def write(self, lock: WriteLock = WHOLE) -> Iterator[Session]:
        """A transaction that reads and then writes: it holds ``lock`` from its start (on SQLite,
        the database's write lock whatever ``lock`` says)."""
        with _busy_as_message(), self._write_factory() as s, s.begin():
            if self._locks and lock.sql is not None:
                s.execute(text(lock.sql))
            yield s

    def dispose(self) -> None:
        self.engine.dispose()
