"""The storage tests run on both databases: SQLite (the embedded default) and PostgreSQL (a team's,
a real server on loopback, see tests/servers.py); and a small project they share."""

from __future__ import annotations

import pytest

from storage.projects import create_project
from storage.utterances import add_utterance


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path):
    """A migrated database: a SQLite file, or a fresh database on the session's PostgreSQL."""
    from storage.db import Database, sqlite_url

    if request.param == "sqlite":
        url = sqlite_url(tmp_path / "studio.db")
    else:
        url = request.getfixturevalue("postgres").new_database()
    database = Database(url, trusted=True)  # storage's own tests change items as no user
    yield database
    database.dispose()


@pytest.fixture
def project(db):
    with db.session() as s:
        p = create_project(s, "shop")
        add_utterance(s, p.id, "where is my parcel", ["track_order"])
        add_utterance(s, p.id, "cancel it please", ["cancel_order"])
        add_utterance(s, p.id, "cancel and refund", ["cancel_order", "refund"])
        add_utterance(s, p.id, "hello there", [], split="unlabelled")
        return p.id


def old_database(path, revision: str, *inserts: str) -> str:
    """A SQLite file at an older schema ``revision`` holding the rows of the ``inserts`` (SQL run
    without the app's pragmas, as that version of the app left it); its URL, to open with
    :class:`storage.db.Database`, which migrates it to the head."""
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import create_engine, text

    from storage.db import MIGRATIONS_DIR, sqlite_url

    url = sqlite_url(path)
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    engine = create_engine(url)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)
        for sql in inserts:
            conn.execute(text(sql))
    engine.dispose()
    return url
