"""``make check`` runs the tests marked ``fast`` (no encoder, no server, no browser), chosen by
the marker, not by a list of paths; tests/conftest.py refuses a fast test that asks for the
encoder or a server, or that loads a sentence encoder while it runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parents[1]


def test_make_check_chooses_its_tests_by_the_marker():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\ncheck:", 1)[1].split("\n\n", 1)[0]
    (line,) = [x for x in recipe.splitlines() if "pytest" in x]
    assert re.search(r"-m fast tests(;|$)", line.strip()), line
    assert "FAST_TESTS" not in makefile


def _pytest(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    """pytest on one module in ``tmp_path``, with tests/conftest.py's hooks and fixtures."""
    (tmp_path / "test_module.py").write_text(source, encoding="utf-8")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:randomly",
            "-p",
            "tests.conftest",
            "-c",
            os.devnull,
            "--rootdir",
            str(tmp_path),
            str(tmp_path),
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_fast_test_that_loads_a_sentence_encoder_fails_and_a_slow_one_may(tmp_path):
    done = _pytest(
        tmp_path,
        "import sys, types\nimport pytest\n\n\n"
        "def load():\n"
        "    sys.modules['sentence_transformers'] = types.ModuleType('sentence_transformers')\n\n\n"
        "@pytest.mark.fast\n"
        "def test_fast_may_not():\n"
        "    load()\n\n\n"
        "def test_slow_may():\n"
        "    sys.modules.pop('sentence_transformers')\n"
        "    load()\n\n\n"
        "@pytest.mark.fast\n"
        "def test_fast_after_a_slow_one():\n"
        "    pass\n",
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert re.search(r"3 passed.* 1 error", out)  # the fixture's check fails its teardown
    assert "test_fast_may_not is marked fast but loaded a sentence encoder" in out


def test_a_fast_test_that_asks_for_the_encoder_stops_the_run_before_it_loads(tmp_path):
    done = _pytest(
        tmp_path,
        "import pytest\n\n\n@pytest.mark.fast\ndef test_uses(encoder):\n    pass\n",
    )
    out = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, out
    assert "marked fast but slow: test_module.py::test_uses (encoder)" in out
