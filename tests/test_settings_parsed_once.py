"""A project's stored settings (the JSON of ``Project.settings``) are parsed at one door,
:func:`app.project_settings.settings_of` (issue 76 item 2: five sites parsed them, each with the
project's name and JSON: the handle, the automatic retrain's watcher, a retrain's snapshot and
a live pool's refresh and its pool for a bundle). Every other reader hands that function the
project's row.

A call parses settings where it is ``ProjectSettings.from_dict(...)``, or where it hands a
``.settings`` attribute (a row's stored JSON) to ``ProjectSettings`` or to a function whose name
ends in ``settings``. Beside the door, only a bundle's import checks the settings it is about to
store (they are not stored yet)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parents[1]
# (module, function) where settings are parsed, and why
ALLOWED = {
    ("app/project_settings.py", "settings_of"): "the one door from a project's row",
    ("app/services/projects/bundles.py", "_bundle_settings"): "a bundle's, before they are stored",
}


def _reads_settings(node: ast.Call) -> bool:
    args = [*node.args, *(k.value for k in node.keywords)]
    return any(
        isinstance(n, ast.Attribute) and n.attr == "settings" for a in args for n in ast.walk(a)
    )


def _parses(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    callee = ast.unparse(node.func)
    if callee.endswith("ProjectSettings.from_dict") or callee == "from_dict":
        return True
    named = callee.split(".")[-1]
    return (named == "ProjectSettings" or named.endswith("settings")) and _reads_settings(node)


def _sites(tree: ast.AST) -> list[tuple[str, int]]:
    """(enclosing function, line) of each call that parses settings."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, function: str) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function = node.name
        if _parses(node):
            found.append((function, node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(tree, "<module>")
    return found


def test_stored_settings_are_parsed_only_at_their_one_door() -> None:
    found: dict[tuple[str, str], list[int]] = {}
    for folder in ("app", "storage"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for function, line in _sites(tree):
                found.setdefault((str(path.relative_to(ROOT)), function), []).append(line)
    extra = {site: lines for site, lines in found.items() if site not in ALLOWED}
    assert extra == {}, "ask app.project_settings.settings_of(project) instead:\n" + "\n".join(
        f"{path}:{lines} in {function}" for (path, function), lines in extra.items()
    )
    # one call each: the door parses once
    assert {site: len(lines) for site, lines in found.items()} == dict.fromkeys(ALLOWED, 1)


def test_the_check_finds_settings_parsed_from_a_row() -> None:
    code = (
        "def a(p): return stored_settings(p.name, p.settings)\n"
        "def b(row): return ProjectSettings.from_dict(row.settings or {})\n"
        "def c(row): return ProjectSettings(**row.settings)\n"
        "def d(stored): return ProjectSettings.from_dict(stored)\n"
        "def e(p, m): return served_metrics(m, p.settings), settings_of(p)\n"
        "def f(state): return queue_for(state.settings), ProjectSettings()\n"
    )
    assert [function for function, _ in _sites(ast.parse(code))] == ["a", "b", "c", "d"]
