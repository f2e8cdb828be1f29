"""kill -9 in the middle of a large import: the database passes its integrity check and the import
is either all there or not there at all (one transaction)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
ROWS = 30_000


@pytest.fixture(scope="module")
def big_csv(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("big") / "big.csv"
    lines = ["text,label"] + [
        f"utterance number {i} about topic {i % 40},topic_{i % 40}" for i in range(ROWS)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _count(db: Path) -> tuple[str, int]:
    con = sqlite3.connect(db)
    try:
        verdict = con.execute("PRAGMA integrity_check").fetchone()[0]
        row = con.execute(
            "SELECT count(*) FROM utterances u JOIN projects p ON p.id = u.project_id"
            " WHERE p.name = 'big'"
        ).fetchone()
        return verdict, int(row[0])
    finally:
        con.close()


def _wal_bytes(db: Path) -> int:
    wal = db.with_name(db.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


@pytest.mark.parametrize("extra", [0.0, 1.0, 2.5])
def test_kill_9_mid_import_leaves_all_or_nothing(tmp_path, big_csv, extra):
    data = tmp_path / "data"
    # The database exists (migrated) before the import starts, as on a running server.
    subprocess.run(
        [sys.executable, "-m", "app", "--data-dir", str(data), "projects"], check=True, cwd=ROOT
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "app",
            "--data-dir",
            str(data),
            "import",
            str(big_csv),
            "--project",
            "big",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    db = data / "studio.db"
    start = _wal_bytes(db)
    deadline = time.monotonic() + 120
    # Wait until the import is writing (its transaction grows the write-ahead log), then a bit.
    while _wal_bytes(db) < start + 256_000 and proc.poll() is None:
        assert time.monotonic() < deadline, "the import never started writing"
        time.sleep(0.05)
    time.sleep(extra)
    finished = proc.poll() is not None
    if not finished:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)
    verdict, n = _count(db)
    assert verdict == "ok"
    assert n in (0, ROWS), f"half an import is in the database: {n} of {ROWS} rows"
    if finished:
        assert n == ROWS
