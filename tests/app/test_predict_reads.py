"""What a prediction reads of the database: one statement when nothing changed (the project, the
caller's membership and its pool's stamp together, as the REST API resolves a project for a
prediction), and a project named by its id or unknown as before."""

from __future__ import annotations

import pytest
from sqlalchemy import event

from app.access import open_project
from app.services.models import predict as predict_svc
from storage.errors import NotFoundError


def test_a_prediction_reads_one_statement_when_nothing_changed(serving_state, demo):
    predict_svc.predict(serving_state.live, demo, ["where is my parcel"])  # the pool, built
    statements: list[str] = []

    def seen(conn, cursor, statement, *_):
        if statement.lstrip().upper().startswith("SELECT"):
            statements.append(statement)

    event.listen(serving_state.db.engine, "before_cursor_execute", seen)
    try:
        p = open_project(serving_state.db, str(demo), stamp=True)
        out = predict_svc.predict(serving_state.live, p, ["where is my parcel"])
    finally:
        event.remove(serving_state.db.engine, "before_cursor_execute", seen)
    assert out[0]["top"] and len(statements) == 1


def test_a_project_named_by_its_id_or_unknown_reads_as_before(serving_state, demo):
    by_name = predict_svc.predict(serving_state.live, demo, ["where is my parcel"])[0]["top"]
    by_id = open_project(serving_state.db, str(demo.id))
    assert (
        predict_svc.predict(serving_state.live, by_id, ["where is my parcel"])[0]["top"] == by_name
    )
    with pytest.raises(NotFoundError, match="No project"):
        open_project(serving_state.db, "no such project")


def test_a_pool_brought_up_after_a_setting_changed_reads_the_project_row_once(serving_state, demo):
    """When a project's stamp moved (a setting changed), its live pool reads the project's row
    once, with its active version, and its factory, its sync and its head data take those
    settings; none of them reads the row again for them (three reads before issue 59: the
    refresh twice, its sync once)."""
    from app.services.projects import projects as project_svc

    predict_svc.predict(serving_state.live, demo, ["where is my parcel"])  # the pool, built
    project_svc.set_settings(serving_state.db, demo, {"anchor_weight": "2"})
    p = open_project(serving_state.db, str(demo), stamp=True)
    rows: list[str] = []

    def seen(conn, cursor, statement, *_):
        head = " ".join(statement.split()).upper()
        if head.startswith("SELECT PROJECTS.") and "FROM PROJECTS" in head:
            rows.append(statement)

    event.listen(serving_state.db.engine, "before_cursor_execute", seen)
    try:
        out = predict_svc.predict(serving_state.live, p, ["where is my parcel"])
    finally:
        event.remove(serving_state.db.engine, "before_cursor_execute", seen)
    assert out[0]["top"] and serving_state.live.pool(p.id, p.stamp).anchors[0] == 2.0
    assert len(rows) == 1, rows
