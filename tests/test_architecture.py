"""The three layers hold: no import cycle between modules, no library imported outside its layer,
no module past the length at which it stops reading as one concern.

The import graph is read from the source with ``ast`` (no module is imported), so the test is fast
and also sees imports inside functions (the lazy ones count: a cycle that only closes at run time
is still a cycle for a reader).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("app", "core", "storage")
MAX_LINES = 400

# What each layer may never import (top-level package names).
FORBIDDEN: dict[str, frozenset[str]] = {
    "core": frozenset({"app", "storage", "gradio", "sqlalchemy", "alembic", "huey", "fastapi"}),
    "storage": frozenset(
        {"app", "core", "torch", "gradio", "sentence_transformers", "transformers", "faiss"}
    ),
    "app": frozenset({"sqlalchemy", "torch", "transformers", "faiss"}),
}
# Gradio is the UI's business: inside app/ only app/ui imports it.
GRADIO_HOME = "app.ui"


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if "migrations" in rel.parts:
                continue
            name = ".".join(rel.with_suffix("").parts).removesuffix(".__init__")
            found[name] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Every module name ``name`` imports (absolute; relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".")
                keep = len(parts) - node.level + (1 if is_package else 0)
                base = ".".join(parts[:keep] + ([base] if base else []))
            out.add(base)
            out.update(f"{base}.{alias.name}" for alias in node.names)
    return out


def _resolve(target: str) -> str | None:
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target or None


IMPORTS = {name: _imports(name, path) for name, path in MODULES.items()}
GRAPH = {
    name: {m for t in targets if (m := _resolve(t)) is not None and m != name}
    for name, targets in IMPORTS.items()
}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[v] = min(low[v], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    # A package whose __init__ re-exports its own submodules is not a cycle for a reader.
    return [c for c in found if not all(m == c[0] or m.startswith(c[0] + ".") for m in c)]


def test_the_analyser_finds_a_cycle_and_ignores_a_package_reexport():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]
    assert _cycles({"pkg": {"pkg.mod"}, "pkg.mod": {"pkg"}}) == []


def test_there_is_no_import_cycle():
    assert _cycles(GRAPH) == []


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_no_layer_imports_what_belongs_to_another(layer):
    wrong = sorted(
        f"{name} imports {target}"
        for name, targets in IMPORTS.items()
        if name.split(".")[0] == layer
        for target in targets
        if target.split(".")[0] in FORBIDDEN[layer]
    )
    assert wrong == []


def test_only_the_ui_imports_gradio():
    wrong = sorted(
        name
        for name, targets in IMPORTS.items()
        if name.startswith("app.")
        and not (name == GRADIO_HOME or name.startswith(GRADIO_HOME + "."))
        and any(t.split(".")[0] == "gradio" for t in targets)
    )
    assert wrong == []


def test_no_module_is_too_long_to_read_as_one_concern():
    long = sorted(
        f"{path.relative_to(ROOT)}: {n} lines"
        for path in MODULES.values()
        if (n := path.read_text(encoding="utf-8").count("\n")) > MAX_LINES
    )
    assert long == []
