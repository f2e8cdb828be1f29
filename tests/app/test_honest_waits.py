"""Issue 65, item 6: ``make run`` printed "Compiling … (about a minute, once)" and then nothing
for 37 minutes on a busy machine, "Building the app's pages…" and then nothing for 11 minutes,
and 106 of its 124 lines were pip's and setuptools' warnings. Every step now says, every 30 s
while it runs, how long it has run and where it is; pip's warnings and notices are not shown,
its errors are."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from app.cli.ticking import ticking

pytestmark = pytest.mark.fast

STEP = Path(__file__).resolve().parents[2] / ".ci" / "step.py"
# A command that talks as pip does on this machine: its notices, then where it is, slowly.
PIP_LIKE = (
    "import sys, time\n"
    "print(\"WARNING: Location 'file:///opt/pypi/simple/torch/' is ignored: it is neither a file "
    'nor a directory.", file=sys.stderr, flush=True)\n'
    "print('  !!', flush=True)\n"
    "print('Collecting torch==2.13.0', flush=True)\n"
    "time.sleep(0.5)\n"
    "print('Downloading torch-2.13.0-cp311-none-linux_x86_64.whl (180.2 MB)', flush=True)\n"
    "time.sleep(0.5)\n"
)


def _step(code: str, every: float = 0.2) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(STEP), "Installing torch", "--", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"STEP_PROGRESS_EVERY": str(every), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )


def test_a_step_says_where_it_is_while_it_runs_and_hides_pips_warnings():
    done = _step(PIP_LIKE)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    lines = out.splitlines()
    assert lines[0] == "==> Installing torch"
    beats = [line for line in lines if line.startswith("    … ")]
    assert any("Collecting torch==2.13.0" in b for b in beats), lines
    assert any("Downloading torch-2.13.0" in b for b in beats), lines
    assert lines[-1].startswith("    done in ")
    assert "WARNING" not in out and "!!" not in out


def test_a_failed_step_shows_its_errors_and_exits_with_their_status():
    failing = PIP_LIKE + (
        "print('ERROR: Could not find a version that satisfies the requirement torch==9')\n"
        "sys.exit(3)\n"
    )
    done = _step(failing, every=30)
    assert done.returncode == 3
    assert "ERROR: Could not find a version" in done.stdout + done.stderr
    assert "failed after" in done.stderr and "exit status 3" in done.stderr
    assert "WARNING: Location" not in done.stdout + done.stderr


def test_a_long_stretch_of_the_server_says_it_goes_on(capfd):
    """Even while the block holds the interpreter's lock (as loading torch does, for a minute
    on a loaded machine): the lines come from a helper process."""
    import time

    with ticking("building the app's pages", every=0.2):
        end = time.monotonic() + 1.0
        while time.monotonic() < end:  # busy for a second
            pass
    said = capfd.readouterr().out.splitlines()
    assert said and all(line.startswith("  … building the app's pages: ") for line in said)
    with ticking("loading the libraries", every=5):
        pass
    assert capfd.readouterr().out == ""  # a short stretch says nothing more
