"""The Dockerfile, which no test machine can build (no docker): torch comes from the index the
build names (CPU unless a CUDA index is passed), every dependency is installed before the code
is copied (a code change rebuilds one thin layer), the dependency layer really builds from
``pyproject.toml`` alone, and ``.dockerignore`` lets in exactly what the COPY lines copy."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "Dockerfile").read_text(encoding="utf-8")
CODE = ("app", "core", "storage", "assets")


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments), continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", TEXT)
    found = []
    for line in joined.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            word, _, rest = line.strip().partition(" ")
            found.append((word.upper(), rest.strip()))
    return found


def copied() -> list[str]:
    return [src for word, rest in instructions() if word == "COPY" for src in rest.split()[:-1]]


def index_of(predicate) -> int:
    return next(i for i, step in enumerate(instructions()) if predicate(*step))


def test_torch_comes_from_the_index_the_build_names_cpu_by_default():
    args = dict(rest.split("=", 1) for word, rest in instructions() if word == "ARG")
    assert args["TORCH_INDEX"] == "https://download.pytorch.org/whl/cpu"
    (torch,) = [rest for word, rest in instructions() if word == "RUN" and "torch==" in rest]
    assert '--index-url "$TORCH_INDEX"' in torch
    # every build arg compose.yaml passes is one the Dockerfile declares
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
    for service in compose["services"].values():
        assert set((service.get("build") or {}).get("args") or {}) <= set(args)


def test_the_torch_pin_is_read_from_constraints_txt():
    (torch,) = [rest for word, rest in instructions() if word == "RUN" and "torch==" in rest]
    (command,) = re.findall(r"\$\((sed [^)]*)\)", torch)
    version = subprocess.run(
        shlex.split(command), cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert re.fullmatch(r"\d+\.\d+\.\d+", version), version


def test_dependencies_are_installed_before_the_code_is_copied():
    torch = index_of(lambda w, r: w == "RUN" and "torch==" in r)
    deps = index_of(lambda w, r: w == "RUN" and '".[app,team]"' in r)
    code = index_of(lambda w, r: w == "COPY" and r.split()[0] in CODE)
    final = index_of(lambda w, r: w == "RUN" and "pip install --no-deps ." in r)
    assert torch < deps < code < final
    assert "-c constraints.txt" in instructions()[deps][1]
    before = [src for w, r in instructions()[:deps] if w == "COPY" for src in r.split()[:-1]]
    assert set(before) == {"constraints.txt", "pyproject.toml"}  # not even README.md
    assert set(CODE) <= set(copied())


def test_the_dependency_layer_builds_from_pyproject_toml_alone(tmp_path):
    """What that layer's ``pip install`` builds first: the project's metadata with no code."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    (tmp_path / "README.md").touch()
    wheel = ["wheel", "--no-deps", "--no-build-isolation", "--no-index", "--quiet", "-w", "out"]
    run = subprocess.run(
        [sys.executable, "-m", "pip", *wheel, "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert [p.name.split("-")[0] for p in (tmp_path / "out").iterdir()] == ["intent_studio"]


def test_the_package_builds_without_a_warning(tmp_path):
    """Issue 58 item 8: a fresh clone's install printed three setuptools deprecation warnings
    (``project.license`` as a TOML table), one per build step. What the backend says is shown
    with ``-v``; none of it is a warning now."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    (tmp_path / "README.md").touch()
    wheel = ["wheel", "--no-deps", "--no-build-isolation", "--no-index", "-v", "-w", "out"]
    run = subprocess.run(
        [sys.executable, "-m", "pip", *wheel, "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    said = run.stdout + run.stderr
    assert run.returncode == 0, said
    assert not re.findall(r".*(?:Warning|DEPRECATION).*", said), said


def test_dockerignore_lets_in_exactly_what_the_dockerfile_copies():
    lines = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines[0] == "*"  # everything else stays out: .venv, .git, data, test-artifacts
    allowed = {line[1:] for line in lines if line.startswith("!")}
    assert allowed == set(copied())
    assert all((ROOT / src).exists() for src in allowed)
    assert "**/__pycache__" in lines


def test_the_data_dir_of_compose_is_prepared_for_the_user_the_image_runs_as():
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
    dirs = {
        shlex.split(s["command"])[shlex.split(s["command"]).index("--data-dir") + 1]
        for s in compose["services"].values()
        if "build" in s
    }
    assert dirs == {"/data"}
    user = index_of(lambda w, r: w == "USER")
    assert instructions()[user][1] != "root"
    prepare = index_of(lambda w, r: w == "RUN" and "mkdir /data" in r)
    assert prepare < user and "chown" in instructions()[prepare][1]
    # private to that user (issue 73 item 2): a new volume takes the folder's mode
    assert "chmod 700 /data" in instructions()[prepare][1]
