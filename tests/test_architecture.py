"""The three layers hold: no import cycle between modules, no library imported outside its layer,
no arrow back up a floor inside ``app/`` and ``core/``, no module past the length at which it
stops reading as one concern.

The import graph is read from the source with ``ast`` (no module is imported), so the test is fast
and also sees imports inside functions (the lazy ones count: a cycle that only closes at run time
is still a cycle for a reader).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast

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

# The floors inside core/ and app/, bottom first (read from the import graph, issue 48). A piece
# (a package, or a module at the layer's root) imports only from its own floor or the floors
# below, and no two pieces import each other. A new piece takes a floor here.
FLOORS: dict[str, tuple[frozenset[str], ...]] = {
    "core": (
        # leaves: the fold splitter, encoders, archives, slots, the 2-D projection and its
        # process, the rule's arithmetic (core.portable, numpy only: a bundle carries it), the
        # training methods' names
        frozenset(
            {"core", "core.folds", "core.encoding", "core.safe_archive", "core.safe_tar"}
            | {"core.errors"}
            | {"core.slots", "core.projection", "core.projection_worker", "core.portable"}
            | {"core.method_names"}
        ),
        frozenset({"core.multilabel"}),  # the multi-label head and its metrics
        frozenset({"core.retrieval"}),  # the pool, the rule, the Predictor
        frozenset({"core.evaluation", "core.labelling"}),  # what measures or orders by the rule
        frozenset({"core.design", "core.training"}),  # design aids, fine-tuning
        frozenset({"core.bundle"}),  # a bundle packs a trained Predictor
    ),
    "app": (
        # settings, limits and leaves
        frozenset({"app", "app.config", "app.limits"})
        | frozenset({"app.project_settings"})
        | frozenset({"app.plots", "app.formats", "app.report"}),
        # the serving state (app.serving: the context and the pieces it holds), who may do what
        # (app.access), the web perimeter (app.perimeter: guards, sign-in, uploads)
        frozenset({"app.serving", "app.access", "app.perimeter"}),
        frozenset({"app.services"}),  # use cases
        frozenset({"app.api", "app.ui", "app.worker"}),  # REST, tabs, the training worker
        frozenset({"app.web", "app.cli", "app.__main__"}),  # entry points
    ),
}
# Arrows up a floor that are known debt, (importer, imported) -> the issue that removes it.
KNOWN_UP_ARROWS: dict[tuple[str, str], str] = {}


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


def _piece(name: str) -> str:
    """The floor piece a module belongs to: its package below the layer, or itself."""
    return ".".join(name.split(".")[:2])


def _floor(piece: str) -> int:
    """Its floor (-1: none yet, which the floor test reports)."""
    layer = piece.split(".")[0]
    return next((i for i, floor in enumerate(FLOORS[layer]) if piece in floor), -1)


def _arrows_between_pieces() -> set[tuple[str, str]]:
    return {
        (_piece(name), _piece(target))
        for name, targets in GRAPH.items()
        for target in targets
        if name.split(".")[0] in FLOORS
        and target.split(".")[0] == name.split(".")[0]
        and _piece(name) != _piece(target)
    }


def test_every_piece_of_app_and_core_has_a_floor():
    pieces = {_piece(name) for name in MODULES if name.split(".")[0] in FLOORS}
    placed = {p for floors in FLOORS.values() for floor in floors for p in floor}
    assert sorted(pieces - placed) == []
    assert sorted(placed - pieces) == []  # a floor names no piece that is gone


def test_no_import_goes_back_up_a_floor():
    up = sorted(
        f"{name} imports {target}"
        for name, targets in GRAPH.items()
        if name.split(".")[0] in FLOORS
        for target in targets
        if target.split(".")[0] == name.split(".")[0]
        and _floor(_piece(target)) > _floor(_piece(name))
        and (name, target) not in KNOWN_UP_ARROWS
    )
    assert up == []


def test_the_known_up_arrows_are_still_there():
    """An up-arrow that was removed leaves the list, so the list only shrinks."""
    gone = sorted(f"{a} -> {b}" for a, b in KNOWN_UP_ARROWS if b not in GRAPH.get(a, set()))
    assert gone == []


def test_no_two_pieces_import_each_other():
    arrows = _arrows_between_pieces()
    both = sorted(f"{a} <-> {b}" for a, b in arrows if (b, a) in arrows and a < b)
    assert [pair for pair in both if not _known_two_way(pair)] == []


def _known_two_way(pair: str) -> bool:
    a, _, b = pair.partition(" <-> ")
    return any({_piece(x), _piece(y)} == {a, b} for x, y in KNOWN_UP_ARROWS)


# The domains of app/services/, bottom first (issue 59 item 3, read from the import graph): a
# domain package imports only from domains on lower floors, never from a peer on its own floor.
SERVICE_DOMAINS: tuple[tuple[str, ...], ...] = (
    ("labelling",),  # utterances, intents, history and undo, bulk, team answers
    ("models",),  # versions and their files, the encoder, evaluation, int8, predictions
    ("design",),  # conflicts, clusters, what-ifs, maps, the slot book
    ("queue",),  # the labelling queue, its orders and answers
    ("training",),  # a retrain's whole life: trigger, request, plan, the worker's phases
    ("projects",),  # projects and the deployment (their settings say the retrain's)
)
SERVICES = "app.services"


def _domain(name: str) -> str | None:
    """The domain package a module of app/services/ sits in (None: loose at the root)."""
    parts = name.split(".")
    return parts[2] if len(parts) > 3 else None


def _domain_floor(domain: str) -> int:
    return next((i for i, floor in enumerate(SERVICE_DOMAINS) if domain in floor), -1)


SERVICE_MODULES = sorted(n for n in MODULES if n.startswith(SERVICES + "."))


def test_no_service_module_sits_loose_at_the_services_root():
    loose = [n for n in SERVICE_MODULES if _domain(n) is None and not _is_domain_package(n)]
    assert loose == []
    domains = {d for n in SERVICE_MODULES if (d := _domain(n)) is not None}
    assert sorted(d for d in domains if _domain_floor(d) < 0) == []  # a new domain takes a floor
    assert sorted(set().union(*SERVICE_DOMAINS) - domains) == []  # no floor names a gone one


# What sits at app/'s root: its two entry points and the settings every floor reads (issue 67
# item 6: the compute budget and the limit store had joined them; each has a room now).
APP_ROOT = {"app", "app.__main__", "app.config", "app.project_settings", "app.web"}


def test_nothing_else_sits_loose_at_the_app_root():
    loose = {n for n in MODULES if n.startswith("app.") and n.count(".") == 1}
    assert {n for n in loose if MODULES[n].name != "__init__.py"} | {"app"} == APP_ROOT


def _is_domain_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py" and name.count(".") == 2


def test_no_service_domain_imports_a_higher_floor_or_a_peer():
    def home(name: str) -> str | None:
        return _domain(name) or (name.split(".")[2] if _is_domain_package(name) else None)

    wrong = sorted(
        f"{name} ({a}) imports {target} ({b})"
        for name in SERVICE_MODULES
        if (a := home(name)) is not None
        for target in GRAPH[name]
        if target.startswith(SERVICES + ".")
        and (b := home(target)) is not None
        and a != b
        and _domain_floor(b) >= _domain_floor(a)
    )
    assert wrong == []


def test_no_module_is_too_long_to_read_as_one_concern():
    long = sorted(
        f"{path.relative_to(ROOT)}: {n} lines"
        for path in MODULES.values()
        if (n := path.read_text(encoding="utf-8").count("\n")) > MAX_LINES
    )
    assert long == []


# Where the whole serving state may not go (issue 67 item 1): a retrain's phases take the job's
# pieces (``RetrainRun``), the front door the database and the deployment's multi-user switch.
TAKE_PIECES = ("app/services/training", "app/access")


def test_the_retrains_phases_and_the_front_door_take_pieces_not_the_process():
    """No module of ``app/services/training`` or ``app/access`` names ``ServingState``: each
    retrain phase takes a :class:`app.services.training.retrain_state.RetrainRun` (built once per
    job by the worker) and can be called with one built by hand; ``access.auth`` takes the
    database and whether the deployment is multi-user; the whole state, brought back, fails."""
    named = sorted(
        str(path.relative_to(ROOT))
        for folder in TAKE_PIECES
        for path in (ROOT / folder).rglob("*.py")
        if "ServingState" in path.read_text(encoding="utf-8")
    )
    assert named == []


def test_a_job_reports_only_the_phases_of_the_one_table():
    """The retrain's phases are written once (issue 67 item 2: ``storage/job_phases.py``); a
    job reports a phase by the table's name for it (``phase=TRAINING``), so a phase written
    again in other words (``phase="train"``) fails here, and every phase the pipeline names is
    one of the table's functions."""
    from app.services.training.retrain import PHASES as PIPELINE
    from storage.job_phases import PHASES

    literal = re.compile(r"""phase=["'][a-z_0-9]+["']""")
    written = sorted(
        f"{name}: {hit}"
        for name, path in MODULES.items()
        if name.startswith("app.")
        for hit in literal.findall(path.read_text(encoding="utf-8"))
    )
    assert written == []
    assert list(PIPELINE) == [p.step for p in PHASES]
    assert len({p.job for p in PHASES}) == len({p.step for p in PHASES}) == len(PHASES)


def test_the_serving_state_is_a_plain_record_of_its_pieces():
    """``ServingState`` (``app/serving/state.py``) holds one of each piece and nothing else
    (issue 59): a frozen dataclass whose fields are the pieces, built by ``open`` and stopped by
    ``close``, with no method or property that hands a call on to a piece (``serving_state.live.pool``,
    never ``serving_state.pool``). A forward added back, or a field set after it is built, fails here."""
    tree = ast.parse((ROOT / "app/serving/state.py").read_text(encoding="utf-8"))
    (record,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ServingState"]
    (decorator,) = record.decorator_list
    assert isinstance(decorator, ast.Call) and ast.unparse(decorator.func) == "dataclass"
    assert {k.arg: ast.unparse(k.value) for k in decorator.keywords} == {"frozen": "True"}
    fields = [ast.unparse(n.target) for n in record.body if isinstance(n, ast.AnnAssign)]
    assert fields == [
        "settings",
        "db",
        "artifacts",
        "models",
        "factories",
        "live",
        "maps",
        "training",
        "readiness",
        "limit_store",
        "uploads",
    ]
    methods = [n for n in record.body if isinstance(n, ast.FunctionDef)]
    assert [m.name for m in methods] == ["open", "close"]
    assert [ast.unparse(d) for d in methods[0].decorator_list] == ["classmethod"]
    assert methods[1].decorator_list == []
    others = [
        n
        for n in record.body
        if not isinstance(n, ast.AnnAssign | ast.FunctionDef)
        and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))  # the docstring
    ]
    assert others == []


# Broad handlers that hand the error on instead of raising it, (module, function) -> how.
HANDS_ON: dict[tuple[str, str], str] = {
    ("app/api/batcher.py", "_drain"): "set on every caller's future: each caller raises it",
}
# What a broad handler may call instead of raising: core.errors.logged / raise_if_bug, and the
# UI's front door for a callback's bug (app.ui.guard.unexpected, issue 58: logged with its
# traceback, shown to the user as an error).
_HANDLED = {"logged", "raise_if_bug", "unexpected"}


def _broad(handler: ast.ExceptHandler) -> bool:
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(n is None or getattr(n, "id", None) in ("Exception", "BaseException") for n in names)


def _own_nodes(body: list[ast.stmt]) -> list[ast.AST]:
    """The nodes of ``body``, not those of a function defined in it."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        out.append(node)
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            todo.extend(ast.iter_child_nodes(node))
    return out


def _broad_handlers() -> list[tuple[str, str, int, bool]]:
    """(module, function, line, whether it raises again or calls logged/raise_if_bug) of every
    ``except Exception`` / ``except BaseException`` / bare ``except`` in ``app/``."""
    found = []
    for name, path in MODULES.items():
        if not name.startswith("app"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in [
            n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        ]:
            for node in _own_nodes(fn.body):
                if isinstance(node, ast.ExceptHandler) and _broad(node):
                    own = _own_nodes(node.body)
                    passes = any(isinstance(n, ast.Raise) for n in own) or any(
                        isinstance(n, ast.Call) and getattr(n.func, "id", None) in _HANDLED
                        for n in own
                    )
                    rel = str(path.relative_to(ROOT))
                    found.append((rel, fn.name, node.lineno, passes))
    return found


def test_no_broad_handler_in_app_swallows_a_programming_error():
    """Issue 59: every ``except Exception`` in app/ either raises again, or logs with the
    traceback and raises a programming error again (core.errors.logged / raise_if_bug), or hands
    the error on (HANDS_ON): an AttributeError, TypeError, KeyError or NameError is never
    silent. A handler that expects particular errors names them instead."""
    handlers = _broad_handlers()
    assert len(handlers) >= 20  # the walk sees them (28 after issue 59)
    silent = [
        f"{m}:{line} ({fn})" for m, fn, line, ok in handlers if not ok and (m, fn) not in HANDS_ON
    ]
    assert silent == []
    assert {(m, fn) for m, fn, _, _ in handlers} >= set(HANDS_ON)  # no stale entry
