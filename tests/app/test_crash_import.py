"""kill -9 in the middle of a large import: the database passes its integrity check, and what the
import leaves is whole rows only.

An import is written in chunks of ``CHUNK_ROWS`` rows, one transaction each (so that labelling
goes on meanwhile). A file of one chunk is all or nothing: killed anywhere, it leaves no row, no
label, no event, not even the project it was creating. A longer file killed half-way keeps the
chunks it committed and nothing of the one it was writing: every row it left has its labels and
its audit event, and those events share one batch id. Importing the file again brings the rest.

The kill is deterministic: the import process is told (``INTENT_STUDIO_FAULT``) to SIGKILL itself
at a named point — after a chunk's rows are written but before their labels
(``import.rows_written``), or with the chunk all written but not committed
(``import.before_commit``); ``@2`` is the second chunk's — instead of being shot after a guessed
sleep."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from app.services.projects.io import CHUNK_ROWS
from storage.faults import ENV, POINTS, parse

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SIZES = {"one_chunk": CHUNK_ROWS, "three_chunks": 2 * CHUNK_ROWS + CHUNK_ROWS // 2}
# (file, fault, utterances the kill leaves)
CASES = [
    ("one_chunk", "import.rows_written", 0),
    ("one_chunk", "import.before_commit", 0),
    ("three_chunks", "import.before_commit", 0),
    ("three_chunks", "import.rows_written@2", CHUNK_ROWS),
    ("three_chunks", "import.before_commit@2", CHUNK_ROWS),
]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    out = {}
    for name, rows in SIZES.items():
        path = tmp_path_factory.mktemp(name) / f"{name}.csv"
        lines = ["text,label"] + [
            f"utterance number {i} about topic {i % 40},topic_{i % 40}" for i in range(rows)
        ]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        out[name] = path
    return out


def _state(db: Path) -> dict[str, object]:
    """What is in project 'big': counts, rows missing a label or an event, batches of events."""
    con = sqlite3.connect(db)
    one = lambda sql: con.execute(sql).fetchone()[0]  # noqa: E731
    mine = (
        "SELECT u.id FROM utterances u JOIN projects p ON p.id = u.project_id WHERE p.name = 'big'"
    )
    events = "SELECT * FROM label_events WHERE action = 'import'"
    try:
        return {
            "integrity": one("PRAGMA integrity_check"),
            "projects": one("SELECT count(*) FROM projects WHERE name = 'big'"),
            "utterances": one(f"SELECT count(*) FROM ({mine})"),
            "labels": one(f"SELECT count(*) FROM labels WHERE utterance_id IN ({mine})"),
            "events": one(f"SELECT count(*) FROM ({events})"),
            "without_label": one(
                f"SELECT count(*) FROM ({mine}) m"
                " WHERE NOT EXISTS (SELECT 1 FROM labels l WHERE l.utterance_id = m.id)"
            ),
            "without_event": one(
                f"SELECT count(*) FROM ({mine}) m"
                f" WHERE NOT EXISTS (SELECT 1 FROM ({events}) e WHERE e.utterance_id = m.id)"
            ),
            "batches": one(f"SELECT count(DISTINCT batch) FROM ({events})"),
        }
    finally:
        con.close()


def _import(data: Path, csv: Path, fault: str | None) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k != ENV}
    if fault is not None:
        env[ENV] = fault
    return subprocess.run(
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


def test_every_fault_point_of_an_import_is_exercised():
    assert {parse(fault)[0] for _, fault, _ in CASES} == {p for p in POINTS if p[:7] == "import."}


@pytest.mark.parametrize(("file", "fault", "left"), CASES)
def test_kill_9_mid_import_leaves_whole_chunks_and_an_intact_database(
    tmp_path, files, file, fault, left
):
    data = tmp_path / "data"
    # The database exists (migrated) before the import starts, as on a running server.
    subprocess.run(
        [sys.executable, "-m", "app", "--data-dir", str(data), "projects"], check=True, cwd=ROOT
    )
    assert _import(data, files[file], fault).returncode == -signal.SIGKILL
    whole = {"without_label": 0, "without_event": 0}
    if left == 0:  # nothing at all, not even the project the import was creating
        assert _state(data / "studio.db") == {
            "integrity": "ok",
            "projects": 0,
            "utterances": 0,
            "labels": 0,
            "events": 0,
            "batches": 0,
            **whole,
        }
    else:  # whole committed chunks: every row with its label and event, one batch
        assert _state(data / "studio.db") == {
            "integrity": "ok",
            "projects": 1,
            "utterances": left,
            "labels": left,
            "events": left,
            "batches": 1,
            **whole,
        }
    # The next import after the crash works and brings the rest (what is there is skipped).
    again = _import(data, files[file], None)
    assert again.returncode == 0, again.stderr.decode()
    rows = SIZES[file]
    assert f"Imported {rows - left} utterance(s)" in again.stdout.decode()
    state = _state(data / "studio.db")
    assert state | {"batches": 0} == {
        "integrity": "ok",
        "projects": 1,
        "utterances": rows,
        "labels": rows,
        "events": rows,
        "batches": 0,
        **whole,
    }


def test_an_unknown_fault_point_is_a_programming_error():
    from storage.faults import fault_point

    with pytest.raises(ValueError, match="unknown fault point"):
        fault_point("import.nowhere")
