"""The app's processes wait for work without spinning: torch's OpenMP threads sleep between
parallel regions (a spinning thread burns the core the server, the worker or anyone else on a
small machine needs), unless the environment says otherwise."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _policy(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    done = subprocess.run(
        [sys.executable, "-c", "import os, app; print(os.environ['OMP_WAIT_POLICY'])"],
        cwd=ROOT,
        env={**clean, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_every_entry_point_waits_passively_unless_told_otherwise():
    assert _policy() == "PASSIVE"
    assert _policy(OMP_WAIT_POLICY="ACTIVE") == "ACTIVE"
