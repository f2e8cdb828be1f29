"""ARCHITECTURE.md, CONTRIBUTING.md, the README and the manual in docs/ point to code that exists:
every path they name in backticks (``app/serving/pools.py``, ``app/services/queue/queue_answers.answer``,
``app/ui/``) is a file or folder of this checkout, so a move or a rename that leaves a page behind
fails here; and every relative link between them (``[formats](docs/formats.md#platform-agents)``)
reaches a file, and a heading of it when it names one."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = (
    "ARCHITECTURE.md",
    "CONTRIBUTING.md",
    "README.md",
    *sorted(f"docs/{page.name}" for page in DOCS.glob("*.md")),
)
LINK = re.compile(r"\]\(([^)\s]+)\)")
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
    missing = [n for n in named if n not in MADE_BY_RUNS and not _target(n).exists()]
    assert missing == []


def test_the_pattern_still_finds_the_pages_paths():
    assert len(PAGES) >= 8  # the manual is found: user guide, formats, REST, operations, ...
    assert len(_named("ARCHITECTURE.md")) > 25 and len(_named("docs/internals.md")) > 100
    assert sum(len(_named(page)) for page in PAGES) > 150


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = page.read_text(encoding="utf-8")
    return {_slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


def _broken_links(page: str) -> list[str]:
    source = ROOT / page
    broken = []
    text = source.read_text(encoding="utf-8")
    prose = re.sub(r"`[^`\n]*`", "", re.sub(r"^```.*?^```", "", text, flags=re.M | re.S))
    for target in LINK.findall(prose):  # not in code: `[Berlin](city)` is Rasa markup
        if re.match(r"[a-z]+:", target):  # http(s), mailto: not a page of this checkout
            continue
        path, _, anchor = target.partition("#")
        file = (source.parent / path).resolve() if path else source
        if not file.exists() or (anchor and anchor not in _anchors(file)):
            broken.append(target)
    return broken


@pytest.mark.parametrize("page", PAGES)
def test_every_relative_link_a_page_has_resolves(page):
    assert _broken_links(page) == []


def test_a_link_to_a_missing_page_or_heading_is_broken(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/a.md").write_text("# A page\n\n## Platform agents\n", encoding="utf-8")
    (tmp_path / "README.md").write_text(
        "[ok](docs/a.md) [ok](docs/a.md#platform-agents) [web](https://x.org/y) "
        "[gone](docs/b.md) [no heading](docs/a.md#platform) [here](#nothing) "
        "`[Berlin](city)`\n```yaml\n- [Paris](city)\n```\n",
        encoding="utf-8",
    )
    assert _broken_links("README.md") == ["docs/b.md", "docs/a.md#platform", "#nothing"]


def test_a_path_means_the_module_or_folder_it_names():
    assert not _target("app/context.py").exists()  # moved to app/serving/: a page naming it fails
    assert _target("app/serving/pools.sync") == ROOT / "app/serving/pools.py"
    assert _target("app/services/training/retrain_jobs.RetrainSpec.parse").name == "retrain_jobs.py"
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
