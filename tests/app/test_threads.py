"""The app's processes wait for work without spinning: torch's OpenMP threads sleep between
parallel regions and numpy's OpenBLAS multiplies on the caller's thread alone (a spinning thread
burns the core the server, the worker or anyone else on a small machine needs), unless the
environment says otherwise."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")  # either sets OpenBLAS's threads
BLAS_THREADS = (
    "import numpy, threadpoolctl; "
    "print([i['num_threads'] for i in threadpoolctl.threadpool_info() if i['user_api'] == 'blas'])"
)


def _policy(code: str = "print(os.environ['OMP_WAIT_POLICY'])", **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", *THREADS)}
    done = subprocess.run(
        [sys.executable, "-c", f"import os, app; {code}"],
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


def test_numpy_multiplies_on_one_thread_in_every_entry_point_unless_told_otherwise():
    assert _policy(BLAS_THREADS) == "[1]"
    assert _policy(BLAS_THREADS, OPENBLAS_NUM_THREADS="2") == "[2]"
