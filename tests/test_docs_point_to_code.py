"""ARCHITECTURE.md, CONTRIBUTING.md and the README point to code that exists: every path they name in
backticks (``app/serving/pools.py``, ``app/services/queue_answers.answer``, ``app/ui/``) is a
file or folder of this checkout, so a move or a rename that leaves a page behind fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("ARCHITECTURE.md", "CONTRIBUTING.md", "README.md")
MADE_BY_RUNS = {"bench/results/"}  # output folders (ignored by git), made when a bench runs
TOP = ("app", "core", "storage", "assets", "tests", "bench")
PATH = re.compile(rf"`((?:{'|'.join(TOP)})/[\w/.]*)`")


def _target(named: str) -> Path:
    """The file or folder a named path means: itself when it has a file's suffix or ends in
    ``/``; else a module, ``a/b`` or ``a/b.attr.more`` meaning ``a/b.py`` (or the folder ``a/b``).
    """
    path = ROOT / named
    if named.endswith("/") or path.suffix in (".py", ".js", ".css", ".md", ".csv", ".toml"):
        return path
    folder, _, last = named.rpartition("/")
    module = ROOT / folder / last.split(".")[0]
    return module if module.is_dir() else module.with_suffix(".py")


def _named(page: str) -> list[str]:
    return PATH.findall((ROOT / page).read_text(encoding="utf-8"))


@pytest.mark.parametrize("page", PAGES)
def test_every_path_a_page_names_exists(page):
    named = _named(page)
    assert len(named) > 5  # the pattern still finds the page's paths
    missing = [n for n in named if n not in MADE_BY_RUNS and not _target(n).exists()]
    assert missing == []


def test_a_path_means_the_module_or_folder_it_names():
    assert not _target("app/context.py").exists()  # moved to app/serving/: a page naming it fails
    assert _target("app/serving/pools.sync") == ROOT / "app/serving/pools.py"
    assert _target("app/services/retrain_jobs.RetrainSpec.parse").name == "retrain_jobs.py"
    assert _target("storage/utterances") == ROOT / "storage/utterances.py"
    assert _target("app/ui/").is_dir()


@pytest.mark.parametrize("page", PAGES)
def test_every_test_a_page_names_exists(page):
    """A page that points to the test of an invariant (``tests/a.py::test_name``) points to a test
    of that module: a renamed or removed test leaves no invariant pointing at nothing."""
    text = (ROOT / page).read_text(encoding="utf-8")
    named = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", text)
    missing = [
        f"{path}::{name}"
        for path, name in named
        if not re.search(rf"^def {name}\(", (ROOT / path).read_text(encoding="utf-8"), re.M)
    ]
    assert missing == []
