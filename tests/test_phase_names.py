"""A retrain's phases are named in one table (storage/job_phases.py, issue 67 item 2): no string
equal to a phase's name is used as a phase anywhere else in app/ or storage/ (issue 76 item 2:
21 were, beside the table, in the job plan, the retrain's jobs, what serves now and the job
store). A phase is used as one where it is compared with something named a phase, passed as a
``phase=``, given to a plan's ``Segment``, assigned to a phase, or gathered with other phases in
a tuple, a list, a set or a dictionary's keys."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from storage.job_phases import PHASES

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parents[1]
NAMES = {p.job for p in PHASES}
TABLE = ROOT / "storage" / "job_phases.py"


def _phase(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and node.value in NAMES else None


def _named_phase(node: ast.AST) -> bool:
    return "phase" in ast.unparse(node).lower()


def _uses(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_named_phase(o) for o in operands):
                for o in operands:
                    items = o.elts if isinstance(o, ast.Tuple | ast.List | ast.Set) else [o]
                    found += [(node.lineno, n) for i in items if (n := _phase(i))]
        elif isinstance(node, ast.keyword) and node.arg == "phase" and (n := _phase(node.value)):
            found.append((node.value.lineno, n))
        elif isinstance(node, ast.Call) and ast.unparse(node.func).endswith("Segment"):
            found += [(node.lineno, n) for a in node.args[:1] if (n := _phase(a))]
        elif isinstance(node, ast.Assign) and any(_named_phase(t) for t in node.targets):
            if n := _phase(node.value):
                found.append((node.lineno, n))
        elif isinstance(node, ast.Tuple | ast.List | ast.Set | ast.Dict):
            items = node.keys if isinstance(node, ast.Dict) else node.elts
            names = [n for i in items if i is not None and (n := _phase(i))]
            if len(names) >= 2:  # a table of phases
                found += [(node.lineno, n) for n in names]
    return found


def test_phase_names_come_only_from_the_one_table() -> None:
    found = []
    for folder in ("app", "storage"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == TABLE:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            found += [f"{path.relative_to(ROOT)}:{line}: {name!r}" for line, name in _uses(tree)]
    assert found == [], "name these phases by storage.job_phases' constants:\n" + "\n".join(found)


def test_the_check_finds_a_phase_written_as_a_string() -> None:
    code = (
        "if job.phase == 'training': pass\n"
        "jobs.log_line(s, 1, 'x', phase='saving')\n"
        "plan = [Segment('serving', 1.0)]\n"
        "SECONDS = {'preparing': 5.0, 'int8': 2.7, 'step_pair': 0.1}\n"
        "if job.phase in ('evaluating', 'x'): pass\n"
        "reasons = {'serving': 'a sentence', 'encoder': 'another'}\n"
    )
    assert sorted(n for _, n in _uses(ast.parse(code))) == [
        "evaluating", "int8", "preparing", "saving", "serving", "training",
    ]  # fmt: skip
