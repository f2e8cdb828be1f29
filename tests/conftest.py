"""Shared fixtures: a temporary SQLite file, the real embedded encoder (loaded once per session),
and the path to the benchmark data beside the checkout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
TEST_DATA = Path(__file__).resolve().parent / "data"
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def encoder():
    """The real all-MiniLM-L6-v2, loaded once for the whole run."""
    from core.encoding.registry import load_encoder

    return load_encoder("minilm", device="cpu")


@pytest.fixture
def db(tmp_path):
    """A migrated SQLite database in a temporary file."""
    from storage.db import Database, sqlite_url

    database = Database(sqlite_url(tmp_path / "studio.db"))
    yield database
    database.dispose()


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.skip("../shared/data is not beside the checkout")
    return SHARED_DATA
