"""kill -9 in the middle of a large import: the database passes its integrity check, and what is
there is whole: an import is written in chunks of one transaction each, so a kill inside a chunk
leaves none of that chunk, and a kill after a chunk leaves exactly the chunks committed, every row
with its labels and its event, all in the import's one batch.

The kill is deterministic: the import process is told (``INTENT_STUDIO_FAULT``) to SIGKILL itself
at a named point of the import — after a chunk's rows are written but before their labels, with
everything written but not committed, or right after the first chunk's commit — instead of being
shot after a guessed sleep."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from storage.faults import ENV, POINTS

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
ROWS = 10_000


@pytest.fixture(scope="module")
def big_csv(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("big") / "big.csv"
    lines = ["text,label"] + [
        f"utterance number {i} about topic {i % 40},topic_{i % 40}" for i in range(ROWS)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _count(db: Path) -> tuple[str, int, int]:
    con = sqlite3.connect(db)
    try:
        verdict = con.execute("PRAGMA integrity_check").fetchone()[0]
        utterances = con.execute(
            "SELECT count(*) FROM utterances u JOIN projects p ON p.id = u.project_id"
            " WHERE p.name = 'big'"
        ).fetchone()[0]
        labels = con.execute("SELECT count(*) FROM labels").fetchone()[0]
        return verdict, int(utterances), int(labels)
    finally:
        con.close()


def _import_batches(db: Path) -> list[tuple[str, int]]:
    con = sqlite3.connect(db)
    try:
        return con.execute(
            "SELECT batch, count(*) FROM label_events WHERE action = 'import' GROUP BY batch"
        ).fetchall()
    finally:
        con.close()


def _import(data: Path, csv: Path, fault: str | None) -> int:
    env = {k: v for k, v in os.environ.items() if k != ENV}
    if fault is not None:
        env[ENV] = fault
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "app",
            "--data-dir",
            str(data),
            "import",
            str(csv),
            "--project",
            "big",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=300,
    )
    return done.returncode


@pytest.mark.parametrize("fault", sorted(POINTS - {"import.chunk_committed"}))
def test_kill_9_inside_the_first_chunk_leaves_nothing_and_an_intact_database(
    tmp_path, big_csv, fault
):
    data = tmp_path / "data"
    # The database exists (migrated) before the import starts, as on a running server.
    subprocess.run(
        [sys.executable, "-m", "app", "--data-dir", str(data), "projects"], check=True, cwd=ROOT
    )
    assert _import(data, big_csv, fault) == -signal.SIGKILL
    assert _count(data / "studio.db") == ("ok", 0, 0)
    # The next import after the crash works and brings everything.
    assert _import(data, big_csv, None) == 0
    assert _count(data / "studio.db") == ("ok", ROWS, ROWS)


def test_kill_9_after_a_chunk_leaves_whole_rows_in_one_batch_and_the_rest_imports_later(
    tmp_path, big_csv
):
    from app.services.io import IMPORT_CHUNK

    assert ROWS > 2 * IMPORT_CHUNK  # several chunks
    data = tmp_path / "data"
    subprocess.run(
        [sys.executable, "-m", "app", "--data-dir", str(data), "projects"], check=True, cwd=ROOT
    )
    assert _import(data, big_csv, "import.chunk_committed") == -signal.SIGKILL
    assert _count(data / "studio.db") == ("ok", IMPORT_CHUNK, IMPORT_CHUNK)
    assert [n for _, n in _import_batches(data / "studio.db")] == [IMPORT_CHUNK]
    # Importing the file again skips what landed and brings the rest.
    assert _import(data, big_csv, None) == 0
    assert _count(data / "studio.db") == ("ok", ROWS, ROWS)


def test_an_unknown_fault_point_is_a_programming_error():
    from storage.faults import fault_point

    with pytest.raises(ValueError, match="unknown fault point"):
        fault_point("import.nowhere")
