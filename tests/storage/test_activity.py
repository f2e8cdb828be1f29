"""When someone last worked on a project in the Label tab (storage.activity, issue 71 item 2): one
row per project, on SQLite and PostgreSQL; the time only moves forward."""

from __future__ import annotations

from datetime import datetime, timedelta

from storage import activity
from storage.projects import create_project


def test_the_last_work_on_a_project_only_moves_forward(db):
    """What the Label tab writes (storage.activity): one row per project, on both databases;
    a late write of an earlier time changes nothing."""
    with db.session() as s:
        pid = create_project(s, "p").id
    t = datetime(2026, 11, 28, 12, 0, 0)
    with db.write() as s:
        activity.mark_active(s, pid, t)
    with db.write() as s:
        activity.mark_active(s, pid, t + timedelta(seconds=3))
        activity.mark_active(s, pid, t + timedelta(seconds=1))
        activity.mark_active(s, pid + 99, t)  # no such project: nothing
    with db.session() as s:
        assert activity.active_at(s, pid) == t + timedelta(seconds=3)
        assert activity.active_at(s, pid + 99) is None
