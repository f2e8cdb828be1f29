#!/usr/bin/env python3
"""Move the flat modules of app/services/ into domain packages (issue 59 item 3).

Run from a checkout's root:  python /work/notes/move_services.py
  (1) reads the import graph of app/services/*.py with ast (lazy imports count),
  (2) places each module by MAPPING below; a module the table does not know stops the script,
  (3) checks that no package imports a higher floor (or a peer on its own floor),
  (4) `git mv`s the files, (5) rewrites every reference in tracked text files
      (`from app.services import m`, `app.services.m`, `app/services/m`), word-bounded,
  (6) writes each package's __init__.py, then runs `ruff check --fix` + `ruff format` on app core
      storage tests bench. It refuses to run twice (a package folder already exists).
"""

from __future__ import annotations

import ast
import re
import subprocess
import textwrap
import sys
from pathlib import Path

# Floors, bottom first. A package imports only from packages on lower floors (never a peer).
FLOORS: list[tuple[str, ...]] = [
    ("labelling",),
    ("models",),
    ("design",),
    ("queue",),
    ("projects", "training"),
]
DOCS = {
    "labelling": "Labelling: a project's utterances and intents as data (browse, add, edit, label, "
    "bulk label, the Data tab's table), their history and undo, and labelling as a team "
    "(assignments, answers, agreement). The bottom floor: it imports no other services package.",
    "models": "Models: a project's model versions, the base encoder it trains and serves, "
    "retrain requests (validate, queue, follow, cancel) and their plan, evaluation through the one "
    "contract, the int8 copy, and predictions explained by neighbours. It may import "
    ":mod:`app.services.labelling` only.",
    "design": "Design aids for the person shaping the intents: conflicts, candidate intents from "
    "clusters, merge/split what-ifs, 2D maps (and their warm-up), the slot book. It may import "
    ":mod:`app.services.labelling` and :mod:`app.services.models`.",
    "queue": "The labelling queue: one unlabelled utterance at a time in the annotator's order "
    "(uncertainty, conflicts, team assignments) and its answers, one transaction a key press. It "
    "may import :mod:`app.services.labelling`, :mod:`app.services.models` and "
    ":mod:`app.services.design`.",
    "projects": "Projects and the deployment around them: creating and listing projects, their "
    "settings, members and accounts, import/export of utterances, model bundles, reports, "
    "downloads and backups. A top floor: it may import every lower package (labelling, models, "
    "design, queue), never :mod:`app.services.training`.",
    "training": "The retrain pipeline a worker runs for one job, as named phases (snapshot, train, "
    "measure, serve, register, int8) with the state they hand each other, and the worker's warm-up. "
    "A top floor: it may import every lower package (labelling, models, design, queue: serving a "
    "new version warms the queue's first card), never :mod:`app.services.projects`.",
}
MAPPING: dict[str, str] = {
    # labelling: data, history, bulk, table import nothing above data; team -> data, history
    "data": "labelling", "history": "labelling", "bulk": "labelling", "table": "labelling",
    "team": "labelling", "team_answers": "labelling",
    # models: evaluation -> labelling.data; encoders -> versions, retrain_jobs -> job_plan
    "versions": "models", "evaluation": "models", "encoders": "models", "retrain_jobs": "models",
    "job_plan": "models", "int8": "models", "predict": "models",
    # calibration (the OOS calibration line) -> encoders, retrain_jobs; settings imports it
    "calibration": "models",
    # design: conflicts -> bulk, data, history, evaluation; clusters -> bulk, maps; maps -> versions
    "conflicts": "design", "clusters": "design", "whatif": "design", "maps": "design",
    "map_warm_up": "design", "slots": "design",
    # queue: queue_order -> conflicts (design), team; queue_answers -> data, history, team
    "queue": "queue", "queue_order": "queue", "queue_answers": "queue",
    # projects: projects -> encoders, io; io -> accounts, downloads, slots; reports -> everything
    "projects": "projects", "settings": "projects", "io": "projects", "reports": "projects",
    "accounts": "projects", "members": "projects", "backup": "projects",
    "downloads": "projects", "bundles": "projects",
    # training: retrain_serve -> queue.order (lazy), evaluation; retrain_measure -> int8, job_plan
    "retrain": "training", "retrain_int8": "training", "retrain_measure": "training",
    "retrain_serve": "training", "retrain_state": "training", "retrain_warm": "training",
    "retrain_calibrate": "training",  # -> retrain_state
}
SVC = Path("app/services")
TEXT_SUFFIXES = {".py", ".md", ".toml", ".cfg", ".ini", ".txt", ".yml", ".yaml", ".rst", ".sh"}


def die(msg: str) -> None:
    sys.exit(f"move_services: {msg}")


def floor_of(pkg: str) -> int:
    return next(i for i, f in enumerate(FLOORS) if pkg in f)


def graph(mods: list[str]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for m in mods:
        deps: set[str] = set()
        for node in ast.walk(ast.parse((SVC / f"{m}.py").read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    die(f"relative import in app/services/{m}.py line {node.lineno}; make it absolute")
                mod = node.module or ""
                if mod == "app.services":
                    deps |= {a.name for a in node.names if a.name in mods}
                elif mod.startswith("app.services."):
                    deps.add(mod.split(".")[2])
            elif isinstance(node, ast.Import):
                deps |= {a.name.split(".")[2] for a in node.names if a.name.startswith("app.services.")}
        deps.discard(m)
        out[m] = deps
    return out


def main() -> None:
    if not SVC.is_dir() or not Path(".git").exists():
        die("run me from a checkout's root (app/services/ and .git here)")
    assert set(MAPPING.values()) <= {p for f in FLOORS for p in f} == set(DOCS)
    done = [p for p in DOCS if (SVC / p).exists()]
    if done:
        die(f"already moved (app/services/{done[0]}/ exists); nothing done")
    mods = sorted(p.stem for p in SVC.glob("*.py") if p.name != "__init__.py")
    unknown = [m for m in mods if m not in MAPPING]
    if unknown:
        die("modules the MAPPING table does not know (add each to a package, by its imports): "
            + ", ".join(f"app/services/{m}.py" for m in unknown))
    missing = [m for m in MAPPING if m not in mods]
    if missing:
        print(f"move_services: note: in MAPPING but gone: {', '.join(missing)}")
    init = (SVC / "__init__.py").read_text(encoding="utf-8")
    if init.strip():
        die("app/services/__init__.py is not empty: re-export its names by hand first")
    g = graph(mods)
    bad = [
        f"{m} ({MAPPING[m]}) imports {d} ({MAPPING[d]})"
        for m, ds in g.items() for d in sorted(ds)
        if MAPPING[d] != MAPPING[m] and floor_of(MAPPING[d]) >= floor_of(MAPPING[m])
    ]
    if bad:
        die("these imports go up a floor (or across one), fix MAPPING or the code:\n  " + "\n  ".join(bad))

    # the moves
    for pkg in DOCS:
        (SVC / pkg).mkdir()
    for m in mods:
        subprocess.run(["git", "mv", str(SVC / f"{m}.py"), str(SVC / MAPPING[m] / f"{m}.py")], check=True)
    # the references
    known = "|".join(sorted((m for m in mods), key=len, reverse=True))
    dotted = re.compile(rf"\bapp\.services\.({known})\b")
    pathy = re.compile(rf"\bapp/services/({known})\b(?!/)")
    from_import = re.compile(r"^([ \t]*)from app\.services import ([^\n(#]+(?:#[^\n]*)?)$", re.M)

    def split_import(mt: re.Match[str]) -> str:
        indent, names = mt.group(1), mt.group(2)
        comment = ""
        if "#" in names:
            names, comment = names.split("#", 1)
            comment = "  #" + comment
        by_pkg: dict[str, list[str]] = {}
        for part in (p.strip() for p in names.split(",")):
            if not part:
                continue
            base = part.split()[0]
            if base not in MAPPING:
                die(f"`from app.services import {base}`: not a module this script knows")
            by_pkg.setdefault(MAPPING[base], []).append(part)
        lines = [f"{indent}from app.services.{p} import {', '.join(ns)}" for p, ns in by_pkg.items()]
        lines[0] += comment
        return "\n".join(lines)

    files = subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True).stdout.split()
    changed = 0
    for f in files:
        p = Path(f)
        if p.suffix not in TEXT_SUFFIXES and p.name not in {"Makefile", "Dockerfile"}:
            continue
        if not p.is_file() or p.name == "move_services.py":
            continue
        src = p.read_text(encoding="utf-8")
        if "app.services" not in src and "app/services" not in src:
            continue
        if re.search(r"from app\.services import \(", src):
            die(f"{f}: parenthesised `from app.services import (`: write it on one line first")
        # dotted first: the split imports it writes (`from app.services.queue import queue`)
        # must not be read again
        new = dotted.sub(lambda mt: f"app.services.{MAPPING[mt.group(1)]}.{mt.group(1)}", src)
        new = from_import.sub(split_import, new)
        new = pathy.sub(lambda mt: f"app/services/{MAPPING[mt.group(1)]}/{mt.group(1)}", new)
        left = [ln for ln in new.splitlines() if re.match(r"\s*from app\.services import ", ln)]
        if left:
            die(f"{f}: an import this script cannot rewrite (tree half done: git reset --hard):\n  "
                + "\n  ".join(left))
        if new != src:
            p.write_text(new, encoding="utf-8")
            changed += 1
    # the packages' docstrings (after the rewrite: they name packages, not modules)
    for pkg, doc in DOCS.items():
        body = textwrap.fill(doc, 99, initial_indent='"""', subsequent_indent="")
        (SVC / pkg / "__init__.py").write_text(body + '"""\n', encoding="utf-8")
        subprocess.run(["git", "add", str(SVC / pkg / "__init__.py")], check=True)

    print(f"move_services: moved {len(mods)} modules into {len(DOCS)} packages; rewrote {changed} files")
    ruff = [sys.executable, "-m", "ruff"] if not Path(".venv/bin/ruff").exists() else [".venv/bin/ruff"]
    dirs = [d for d in ("app", "core", "storage", "tests", "bench") if Path(d).is_dir()]
    subprocess.run([*ruff, "check", "--fix", "--quiet", *dirs], check=False)
    subprocess.run([*ruff, "format", "--quiet", *dirs], check=False)


if __name__ == "__main__":
    main()
