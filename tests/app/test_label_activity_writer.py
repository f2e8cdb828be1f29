"""The Label tab's activity writer (:class:`app.perimeter.in_use.Working`): ``wait_written``
answers True only once the database holds the activity, committed, and a write the database
refused is tried again, not taken as written."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from app.perimeter.in_use import Working
from storage.activity import active_at
from storage.db import Database, sqlite_url
from storage.errors import DatabaseUnavailable
from storage.projects import create_project


class SlowCommit(Database):
    """A database whose write transactions commit ``delay`` seconds after their statements,
    and refuse the first ``refuse`` of them as a busy database does."""

    def __init__(self, url: str, delay: float = 0.0, refuse: int = 0) -> None:
        super().__init__(url)
        self.delay, self.refuse, self.refused = delay, refuse, 0

    @contextlib.contextmanager
    def write(self, *args, **kwargs) -> Iterator:  # type: ignore[override]
        if self.refused < self.refuse:
            self.refused += 1
            raise DatabaseUnavailable(DatabaseUnavailable.MESSAGE)
        with super().write(*args, **kwargs) as s:
            yield s
            time.sleep(self.delay)  # the statements ran; the commit comes after this


def project(db: Database) -> int:
    with db.session() as s:
        return create_project(s, "p").id


def test_written_means_committed_where_another_session_reads_it(tmp_path) -> None:
    db = SlowCommit(sqlite_url(tmp_path / "studio.db"), delay=0.5)
    pid = project(db)
    work = Working(db)
    work.touch(pid)
    assert work.wait_written(timeout=30)
    with db.session() as s:
        assert active_at(s, pid) is not None


def test_a_refused_write_is_tried_again_and_not_taken_as_written(tmp_path) -> None:
    db = SlowCommit(sqlite_url(tmp_path / "studio.db"), refuse=1)
    pid = project(db)
    work = Working(db, every=0.2)
    work.touch(pid)
    assert work.wait_written(timeout=30)
    assert db.refused == 1
    with db.session() as s:
        assert active_at(s, pid) is not None


def test_wait_written_says_false_while_the_database_refuses(tmp_path) -> None:
    db = SlowCommit(sqlite_url(tmp_path / "studio.db"), refuse=10**6)
    pid = project(db)
    work = Working(db, every=0.05)
    work.touch(pid)
    assert not work.wait_written(timeout=0.5)
    assert db.refused >= 2  # tried again at its pace
    db.refuse = 0  # the database answers again: the activity arrives
    assert work.wait_written(timeout=30)
    with db.session() as s:
        assert active_at(s, pid) is not None
