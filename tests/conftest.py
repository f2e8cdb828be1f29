"""Shared fixtures: a temporary SQLite file, the real embedded encoder (loaded once per session),
and the path to the benchmark data beside the checkout."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# An int8 copy and its parity check cost seconds per retrain, and most tests retrain: the int8
# tests (tests/app/test_int8_serving.py, the CLI's) turn it on for themselves.
os.environ.setdefault("INTENT_STUDIO_INT8", "off")
# No server or worker of the tests retrains a project by itself (the demo's labels would start
# one at every start): the tests of automatic retrains turn it on for their own.
os.environ.setdefault("INTENT_STUDIO_AUTO_RETRAIN", "off")
# Under pytest-xdist (`make test` runs two workers, one per core) each worker, and each server or
# worker process it starts, computes on one thread: two processes each spinning as many OpenMP
# threads as there are cores wait on each other and burn CPU (the suite's CPU: 14 -> 24 min).
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["OMP_NUM_THREADS"] = "1"

ROOT = Path(__file__).resolve().parents[1]
TEST_DATA = Path(__file__).resolve().parent / "data"
SHARED_DATA = ROOT.parent / "shared" / "data"


# What a test marked ``fast`` (``make check``: no encoder, no server, no browser) may not use.
SLOW_FIXTURES = frozenset(
    {
        "encoder",
        "tiny_encoder",
        "tiny_everywhere",
        "serving_state",
        "demo",
        "postgres",
        "pg_db",
        "redis_url",
        "s3",
        "page",
    }
    | {"browser"}
)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under ``-m fast`` (``make check``: ``pytest -m fast tests``) a test module that marks
    nothing fast is not imported, nor a folder without one (its conftest.py neither): collecting
    every module would import the whole app, ~10 s of a core. A fast test is marked in its own
    module (``pytestmark = pytest.mark.fast`` or ``@pytest.mark.fast``)."""
    if config.getoption("markexpr", "") != "fast" or collection_path.name == "conftest.py":
        return None
    if collection_path.is_dir():
        return not any(f.is_relative_to(collection_path) for f in _fast_modules())
    return collection_path.suffix == ".py" and collection_path not in _fast_modules()


@functools.cache
def _fast_modules() -> frozenset[Path]:
    """The modules under tests/ that mark a test fast."""
    here = Path(__file__).resolve().parent
    return frozenset(
        path
        for path in here.rglob("test_*.py")
        if "mark.fast" in path.read_text(encoding="utf-8", errors="replace")
    )


# Whether a test not marked fast has run in this process (it may have loaded the encoder), and
# whether a fast one was already named for loading it.
_seen = {"slow": False, "named": False}


@pytest.fixture(autouse=True)
def _fast_means_no_encoder(request: pytest.FixtureRequest):
    """A test marked ``fast`` loads no sentence encoder: sentence-transformers is not imported
    while it runs, nor before it (at import, by a module's fixture) while only fast tests ran."""
    if request.node.get_closest_marker("fast") is None:
        _seen["slow"] = True
        yield
        return
    before = "sentence_transformers" in sys.modules
    if before and not _seen["slow"] and not _seen["named"]:
        _seen["named"] = True
        pytest.fail("sentence-transformers was imported before this fast test, by a fast module")
    yield
    if not before and "sentence_transformers" in sys.modules:
        _seen["named"] = True
        pytest.fail(f"{request.node.nodeid} is marked fast but loaded a sentence encoder")


@pytest.fixture(autouse=True)
def _encoder_memo(request: pytest.FixtureRequest):
    """The base encoders answer a text already encoded in this process from memory
    (:mod:`tests.encoder_memo`), except in a test marked ``fast`` (no encoder) or
    ``encoder_passes`` (the forward passes' time or load is what it tests)."""
    node = request.node
    if node.get_closest_marker("fast") or node.get_closest_marker("encoder_passes"):
        yield
        return
    from tests import encoder_memo

    encoder_memo.install()
    encoder_memo.active(True)
    try:
        yield
    finally:
        encoder_memo.active(False)


def _not_fast(item: pytest.Item) -> list[str]:
    """Why a test marked fast is not (a slow fixture it asks for, a slow mark), or nothing."""
    if item.get_closest_marker("fast") is None:
        return []
    callspec = getattr(item, "callspec", None)
    fixtures = set(getattr(item, "fixturenames", ())) - set(callspec.params if callspec else ())
    return sorted(SLOW_FIXTURES & fixtures) + [
        m for m in ("slow", "e2e") if item.get_closest_marker(m)
    ]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Whole modules in this order: the browser tests, the other slow ones (``slow``: a server or
    a training), the rest; each module's tests in their order. Under pytest-xdist a long module
    started last would leave one worker finishing alone while the other has nothing to take.

    A test marked ``fast`` that is also slow or asks for one of :data:`SLOW_FIXTURES` stops the
    run here, before anything starts."""
    wrong = [f"{item.nodeid} ({', '.join(why)})" for item in items if (why := _not_fast(item))]
    if wrong:
        raise pytest.UsageError("marked fast but slow: " + "; ".join(wrong))
    rank: dict[str, int] = {}
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        mark = 0 if item.get_closest_marker("e2e") else 1 if item.get_closest_marker("slow") else 2
        rank[module] = min(rank.get(module, 2), mark)
    items.sort(key=lambda item: rank[item.nodeid.split("::", 1)[0]])


def scheduling_unit(nodeid: str) -> str:
    """What one pytest-xdist worker runs whole: a test module, or a whole folder of browser tests
    (``tests/e2e/<folder>/``), whose modules share one server started once.

    Example:
        >>> scheduling_unit("tests/e2e/demo/test_design.py::test_a_cluster")
        'tests/e2e/demo'
        >>> scheduling_unit("tests/e2e/test_harness.py::test_x"), scheduling_unit("core/a.py::a.f")
        ('tests/e2e/test_harness.py', 'core/a.py')
    """
    module = nodeid.split("::", 1)[0]
    folder, _, _ = module.rpartition("/")
    return folder if folder.startswith("tests/e2e/") else module


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Hand each worker a whole :func:`scheduling_unit` at a time, for any ``-n`` run, in
    collection order: a module's tests share its server and browser (module fixtures) and
    follow each other's steps; a folder's modules share one server."""
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scheduling_unit(nodeid)

    config.option.loadscopereorder = False  # the order collection gave, not by test count
    return UnitScheduling(config, log)


@pytest.fixture(scope="session")
def encoder():
    """The real all-MiniLM-L6-v2, loaded once for the whole run."""
    from core.encoding.registry import load_encoder

    return load_encoder("minilm", device="cpu")


@pytest.fixture(scope="session")
def _tiny_encoder_folder(tmp_path_factory) -> Path:
    from tests.tiny_encoder import build

    return build(tmp_path_factory.mktemp("tiny-encoder"))


@pytest.fixture
def tiny_encoder(_tiny_encoder_folder, monkeypatch) -> str:
    """The tiny encoder (:mod:`tests.tiny_encoder`), built once per test process and registered
    for this test only (the registry is the process's: a later test, or a doctest that lists
    the encoders, sees it as it was): its name, for the tests that need an encoder's code paths,
    not its answers."""
    from core.encoding import registry
    from tests.tiny_encoder import NAME, spec

    monkeypatch.setitem(registry._REGISTRY, NAME, spec(_tiny_encoder_folder))
    return NAME


@pytest.fixture
def tiny_everywhere(tiny_encoder, _tiny_encoder_folder, monkeypatch) -> str:
    """The tiny encoder registered in this process (``tiny_encoder``) and in every Python process
    the test starts with this environment (tests/subprocess_site/sitecustomize.py, first on the
    PYTHONPATH): for the tests of workers, servers and CLIs that need an encoder's code paths in
    another process, not its answers (MiniLM costs each of them seconds to load and train)."""
    site = ROOT / "tests" / "subprocess_site"
    monkeypatch.setenv("INTENT_STUDIO_TEST_TINY", str(_tiny_encoder_folder))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), str(ROOT)]))
    return tiny_encoder


@pytest.fixture(scope="session")
def _migrated_sqlite(tmp_path_factory) -> Path:
    """An empty SQLite database at the newest schema, migrated once per test process: the
    databases of :func:`db` and ``serving_state`` (tests/app/conftest.py) start as copies of it.
    Alembic's 20 migrations cost ~0.05 s of CPU a database, and some 600 tests make one;
    each migration from empty is tested in tests/storage, and every server a test starts
    still migrates its own."""
    from storage.db import Database, sqlite_url

    path = tmp_path_factory.mktemp("migrated") / "studio.db"
    Database(sqlite_url(path)).dispose()  # its last connection closed: the WAL folded in
    return path


def migrated_copy(template: Path, path: Path) -> Path:
    """``template`` (:func:`_migrated_sqlite`) copied to ``path``, a database file not made yet."""
    import shutil

    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        raise FileExistsError(path)
    shutil.copyfile(template, path)
    return path


@pytest.fixture
def db(tmp_path, _migrated_sqlite):
    """A migrated SQLite database in a temporary file."""
    from storage.db import Database, sqlite_url

    database = Database(sqlite_url(migrated_copy(_migrated_sqlite, tmp_path / "studio.db")))
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
