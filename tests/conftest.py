"""Shared fixtures: a temporary SQLite file, the real embedded encoder (loaded once per session),
and the path to the benchmark data beside the checkout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# An int8 copy and its parity check cost seconds per retrain, and most tests retrain: the int8
# tests (tests/app/test_int8_serving.py, the CLI's) turn it on for themselves.
os.environ.setdefault("INTENT_STUDIO_INT8", "off")

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


# --- real servers on loopback (tests/servers.py): started once, only when a test asks ------------


@pytest.fixture(scope="session")
def postgres():
    from tests.servers import start_postgres

    yield from start_postgres()


@pytest.fixture(scope="session")
def redis_url():
    from tests.servers import start_redis

    yield from start_redis()


@pytest.fixture(scope="session")
def s3():
    from tests.servers import start_s3

    yield from start_s3()


@pytest.fixture
def pg_db(postgres):
    """A migrated database of its own on the session's PostgreSQL."""
    from storage.db import Database

    database = Database(postgres.new_database())
    yield database
    database.dispose()
