from __future__ import annotations

import pytest


@pytest.fixture
def ctx(tmp_path):
    """An app context on a fresh data directory (real SQLite file, real artifact and cache dirs)."""
    from app.config import load_settings
    from app.context import AppContext

    context = AppContext(load_settings(tmp_path / "data"))
    yield context
    context.close()


@pytest.fixture
def demo(ctx):
    from app.services.projects import ensure_demo_project

    return ensure_demo_project(ctx)
