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
    database = Database(url)
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
