from __future__ import annotations

import pytest


@pytest.fixture
def serving_state(tmp_path, _migrated_sqlite):
    """An app context on a fresh data directory (real SQLite file, real artifact and cache dirs),
    wired to the real queue as `serve` wires it (a test starts a worker when it needs one). Its
    database starts as a copy of the session's migrated one (tests/conftest.py)."""
    from app.config import load_settings
    from app.serving.state import ServingState
    from app.worker import queue_for
    from tests.conftest import migrated_copy

    settings = load_settings(tmp_path / "data")
    if not settings.db_url:
        migrated_copy(_migrated_sqlite, settings.data_dir / "studio.db")
    context = ServingState.open(settings)
    context.training.enqueue = queue_for(context.settings)
    yield context
    context.close()


@pytest.fixture
def demo(serving_state):
    """The demo project, as each call of a test resolves it (:class:`tests.handles.Live`)."""
    from app.services.projects.projects import ensure_demo_project
    from tests.handles import live

    return live(serving_state, ensure_demo_project(serving_state.db))
