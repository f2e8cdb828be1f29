"""Benchmark: the ``intent-studio`` command's start-up, cold (issue 59 item 6).

What a designer waits for at a shell, each a fresh process on a fresh copy of a data directory:

* ``train --help``: the parser alone;
* ``predict 1,000 (base)``: ``predict --project banking77 --input lines.txt`` of ``--lines``
  BANKING77 test questions the project does not hold, with the frozen base encoder (a project
  never retrained); model load, the pool's sync and the 1,000 texts' encoding included;
* ``predict 1,000 (retrained)``: the same after one ``train`` of the project (``--train-set``
  KEY=VALUE is passed to it; on a CPU the version serves its int8 copy when its parity passed).

The project is BANKING77 10-shot seed 0 (770 train) and 500 test questions from
``../shared/data``, imported and trained by each checkout's own CLI, then used once (a
prediction of another text: its pool's vectors and calibration are on disk, as in a project in
use). Query texts are never cached: every measured run encodes its 1,000 lines.

With several checkouts (``--peer REV`` archives a commit of this repository into the work
folder; ``--code PATH`` any checkout) the measurements take turns (A B A B ...) so both see the
same load; each checkout runs once untimed first, which writes its bytecode (the child processes
run without ``PYTHONDONTWRITEBYTECODE``: an installed app has its ``.pyc`` files). Each row is
the median over ``--repeats`` of the wall seconds of the process (spawn to exit) and its CPU
seconds; below the table, the packages each command loaded that a local project does not need
(the web door, S3, the figures, the queue) and whether it loaded torch. ``--out`` writes every
run as JSON.

Usage:
    python -m bench.cli --peer main --code . --repeats 5 --out bench/results/cli.json
    python -m bench.cli --code . --repeats 1 --lines 100 --train-set epochs=1   # a quick check
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._checkouts import checkout_options, load_average, peer_checkout, revision

ROOT = Path(__file__).resolve().parents[1]
PROJECT = "banking77"
# What a local project's train and predict do not need: the web door, S3, the figures, the queue.
NOT_NEEDED = (
    *("starlette", "gradio", "fastapi", "uvicorn", "boto3", "botocore", "plotly", "colorcet"),
    *("cryptography", "brotli", "huey", "redis"),
)

# Runs the CLI's own main in the measured process, then says on stderr what it loaded.
CHILD = r"""
import json, sys
from app.cli import main
try:
    rc = main(json.loads(sys.argv[1]))
except SystemExit as exc:  # --help
    rc = exc.code or 0
top = sorted({m.split(".")[0] for m, v in list(sys.modules.items()) if v is not None})
print("BENCH " + json.dumps({"rc": rc, "modules": len(sys.modules), "top": top}), file=sys.stderr)
sys.exit(rc)
"""


def environment(code: Path, data: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(code), "INTENT_STUDIO_DATA_DIR": str(data)}
    for name in ("PYTHONDONTWRITEBYTECODE", "INTENT_STUDIO_ARTIFACTS_URL", "INTENT_STUDIO_DB_URL"):
        env.pop(name, None)
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    return env


def cli(code: Path, data: Path, argv: list[str], *, quiet: bool = True) -> dict[str, Any]:
    """One ``intent-studio`` process; its wall and CPU seconds and what it loaded."""
    before = os.times()
    t = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(argv)],
        cwd=code,
        env=environment(code, data),
        stdout=subprocess.DEVNULL if quiet else subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wall = time.perf_counter() - t
    after = os.times()
    marks = [line for line in done.stderr.splitlines() if line.startswith("BENCH ")]
    if done.returncode != 0 or not marks:
        raise RuntimeError(f"{argv} failed (rc {done.returncode}):\n{done.stderr[-4000:]}")
    info: dict[str, Any] = json.loads(marks[-1][len("BENCH ") :])
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return {"wall": round(wall, 3), "cpu": round(cpu, 3), **info}


def texts(shared: Path, project_csv: Path, n: int) -> list[str]:
    """``n`` BANKING77 test questions that the project does not hold."""
    with project_csv.open(encoding="utf-8", newline="") as f:
        held = {r["text"] for r in csv.DictReader(f)}
    with (shared / "banking77" / "test.csv").open(encoding="utf-8", newline="") as f:
        out = [r["text"] for r in csv.DictReader(f) if r["text"] not in held]
    return [t.replace("\n", " ") for t in out[:n]]


def build(code: Path, place: Path, project_csv: Path, train_set: list[str]) -> dict[str, Path]:
    """The project imported (``base``) and then trained once (``retrained``) by ``code``,
    each used once; reused when there."""
    built = {"base": place / "base", "retrained": place / "retrained"}
    if (place / "built").is_file():
        return built
    shutil.rmtree(place, ignore_errors=True)
    place.mkdir(parents=True)
    use = ["predict", "--project", PROJECT, "hello there"]
    cli(code, built["base"], ["import", str(project_csv), "--project", PROJECT])
    cli(code, built["base"], use)
    shutil.copytree(built["base"], built["retrained"])
    train = ["train", "--project", PROJECT, *[a for kv in train_set for a in ("--set", kv)]]
    cli(code, built["retrained"], train)
    cli(code, built["retrained"], use)
    (place / "built").write_text("")
    return built


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    checkout_options(ap, repeats=3, what="measurements of each command")
    ap.add_argument("--lines", type=int, default=1000, help="utterances predicted")
    ap.add_argument(
        "--train-set", action="append", default=[], metavar="KEY=VALUE", help="for the train"
    )
    ap.add_argument("--work", type=Path, default=None, help="where builds go (reused if there)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    work = (args.work or Path(tempfile.mkdtemp(prefix="bench-cli-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    codes = [peer_checkout(rev, work) for rev in args.peer]
    codes += [c.resolve() for c in args.code] or ([] if codes else [ROOT])
    labels = [revision(c) for c in codes]

    from tests.e2e.conftest import banking77_csv

    project_csv = banking77_csv(args.data, work / "banking77.csv", unlabelled=0, test=500)
    lines = work / f"lines-{args.lines}.txt"
    lines.write_text("".join(t + "\n" for t in texts(args.data, project_csv, args.lines)))
    builds = {
        lab: build(code, work / f"build-{lab}", project_csv, args.train_set)
        for code, lab in zip(codes, labels, strict=True)
    }
    predict = ["predict", "--project", PROJECT, "--input", str(lines), "--format", "jsonl"]
    commands = {
        "train --help": ("base", ["train", "--help"]),
        f"predict {args.lines:,} (base)": ("base", predict),
        f"predict {args.lines:,} (retrained)": ("retrained", predict),
    }
    for code, lab in zip(codes, labels, strict=True):  # untimed: writes the bytecode
        cli(code, builds[lab]["base"], ["train", "--help"])
    runs: list[dict[str, Any]] = []
    for turn in range(args.repeats):
        for name, (state, command) in commands.items():
            for code, lab in zip(codes, labels, strict=True):
                data = work / f"data-{lab}"
                shutil.rmtree(data, ignore_errors=True)
                shutil.copytree(builds[lab][state], data)
                load = load_average()
                result = cli(code, data, command)
                runs.append({"code": lab, "command": name, "turn": turn, "load": load, **result})
                print(
                    f"{lab} #{turn} {name}: {result['wall']:.2f}s (cpu {result['cpu']:.2f}s), "
                    f"{result['modules']} modules, load {load}",
                    flush=True,
                )
                shutil.rmtree(data, ignore_errors=True)
    width = max(20, *(len(lab) + 2 for lab in labels))
    print(f"\nmedian of {args.repeats}: wall seconds (CPU seconds), one process each")
    print(f"{'command':<28}" + "".join(f"{lab:>{width}}" for lab in labels))
    for name in commands:
        cells = []
        for lab in labels:
            mine = [r for r in runs if r["code"] == lab and r["command"] == name]
            wall = _median([r["wall"] for r in mine])
            cpu = _median([r["cpu"] for r in mine])
            cells.append(f"{f'{wall:.2f} ({cpu:.2f})':>{width}}")
        print(f"{name:<28}" + "".join(cells))
    print("\nloaded, not needed by a local project (and torch):")
    for name in commands:
        for lab in labels:
            mine = [r for r in runs if r["code"] == lab and r["command"] == name]
            top = set(mine[0]["top"]) if mine else set()
            extra = sorted(top & set(NOT_NEEDED)) + (["torch"] if "torch" in top else [])
            print(f"  {name:<26} {lab:<16} {', '.join(extra) or '-'}")
    print(f"load average at the starts: {[r['load'] for r in runs]}")
    medians = {
        lab: {
            name: {
                key: _median([r[key] for r in runs if r["code"] == lab and r["command"] == name])
                for key in ("wall", "cpu")
            }
            for name in commands
        }
        for lab in labels
    }
    report = {
        "codes": dict(zip(labels, map(str, codes), strict=True)),
        "lines": args.lines,
        "train_set": args.train_set,
        "repeats": args.repeats,
        "medians": medians,
        "runs": runs,
    }
    print(json.dumps({k: v for k, v in report.items() if k != "runs"}))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
