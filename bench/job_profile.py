"""Benchmark: one retrain through the worker's own path, seconds per phase (issues 44, 55).

The project is BANKING77 10-shot seed 0 (770 train) with every test question (3,078 once
deduplicated) from ``../shared/data``, imported with the CLI. Each measurement is a fresh
process on a fresh copy of that data directory running ``intent-studio train`` (the CLI's own
``main``: the job is queued and :func:`app.worker.execute_job` runs it, as a worker would), with
timers wrapped around the functions each phase is made of. The same child code runs any
checkout: a function a checkout does not have is simply not timed.

The first table is the retrain's named phases (issue 55: :data:`PIPELINE`, each a function of
``app/services/training/retrain*.py``, timed gross): ``snapshot`` → ``train`` → ``save`` → ``measure`` →
``serve`` (the version registered and active: it answers from here) → ``int8`` (a CPU: its copy
built, checked, measured) → ``register`` → ``calibrate`` (where the project's out-of-scope
calibration is held-out: ``auto`` on CUDA; its held-out encoders' training counts in ``training``
below). A checkout from before those functions (``--peer``
of main before issue 55) is timed by the phases its job named instead (``preparing`` →
``snapshot``, ``training`` → ``train``, ``saving``, ``evaluating`` → ``measure``, ``int8``,
``registering`` → ``register``, ``serving`` (its first-card vectors, last) → ``serve``), in
the order it ran them. Below them: ``job start -> version active`` (the version registered and
active, from the job's start: what a user waits for once a worker took the job), ``around
training (to active)`` (that less the ``train`` phase: the issue's "new version answering, minus
training", without the app's queue and server: ``bench/load.py --scenario retrain`` measures
that through the app), and when the job ended.

The second table: the functions each phase is made of (wall and process CPU seconds, each net
of the timed functions nested inside it):

* ``start + imports``: from the parent's spawn to the child's imports done;
* ``cli + queue``: the CLI's context, the job queued, until the job starts;
* ``snapshot``: the dataset snapshot (:func:`storage.datasets.snapshot`, ``snapshot_rows``);
* ``model load``: every encoder loaded (the base for training, the saved model read back, a
  frozen or older version for its evaluation; where training copies the process's base, the
  copy);
* ``training``: :func:`core.training.train_encoder` less its model load;
* ``save``: the trained model written;
* ``eval new`` / ``eval frozen`` / ``eval active``: :func:`app.services.models.evaluation.evaluate_version`
  of each encoder (encoding its missing vectors and scoring);
* ``calibration``: out-of-scope calibration (:func:`core.evaluation.oos.calibrate_predictor`);
* ``int8 export``: the int8 ONNX export less its parity check; ``parity``: the parity check;
* ``first-card vectors``: :func:`app.services.training.retrain_serve.first_card_vectors` (before issue
  55 ``app.worker.prepare_vectors``) less its calibration;
* ``registration``: hashing the artifact, registering the version, finishing the job;
* ``other``: the rest of the job (reporting, factories, ...);
* ``after the job``: from the job's end to the CLI's return (the process then runs this bench's
  own epilogue: a fresh context reading the job and the version, not counted).

``version active`` is when the version was registered (and, when promoted, made active in the
same transaction: the app's next prediction answers with it); ``job done`` when
:func:`~app.worker.execute_job` returned (work a checkout does after serving, such as its int8
copy, ends there); ``process`` when the CLI process exited. Then
``--restarts`` fresh processes on the retrained data directory each time their first
prediction (:func:`app.services.models.predict.predict`, what the server's first request pays when
its start-up warm-up has not built the pool yet) and the next one.

``--method`` and ``--set KEY=VALUE`` are passed to ``train`` (default: the fast recipe); each
run records the device its training ran on. Each round runs ``--retrains`` retrains one after
another on the same data directory (each its own process: the second retrain finds the first's
version active, and the same data). With several checkouts (``--peer REV`` archives a commit
of this repository into the work folder; ``--code PATH`` any checkout) the measurements take
turns (A B A B ...) so both see the same load: timings swing 2-4x on a shared 2-core machine;
the load average is recorded with each run.

Usage:
    python -m bench.job_profile --peer b599b03 --code . --repeats 2 --out bench/results/jp.json
    python -m bench.job_profile --code . --retrains 1 --restarts 0 --test 200 --set epochs=1
    python -m bench.job_profile --peer c5a8e1b --code . --restarts 0 --new-labels 20  # as designed
                                                             # a quick check that it runs
    python -m bench.job_profile --device cuda --code .       # on a GPU machine
    python -m bench.job_profile --method lora --code .       # the LoRA recipe (``--set K=V`` too)
    python -m bench.job_profile --code . --project-set oos_calibration=held-out
                                          # the held-out calibration's cost on this CPU
"""

from __future__ import annotations

import argparse
import itertools
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

from bench._checkouts import (
    PIECES,
    PROJECT,
    ROOT,
    build,
    checkout_options,
    environment,
    load_average,
    peer_checkout,
    revision,
)
from storage.job_phases import PHASES as JOB_PHASE_TABLE

# The retrain's named phases (issue 55: each a function, in app/services/training/retrain*.py),
# and a checkout's job phases (storage's TrainingJob.phase) as the pipeline's names: the one
# table of storage/job_phases.py (issue 67), which older checkouts named alike.
PIPELINE = [p.step for p in JOB_PHASE_TABLE]
JOB_PHASES = {p.job: p.step for p in JOB_PHASE_TABLE}
PHASES = [
    "start + imports",
    "cli + queue",
    "snapshot",
    "model load",
    "training",
    "save",
    "eval new",
    "eval frozen",
    "eval active",
    "calibration",
    "int8 export",
    "parity",
    "first-card vectors",
    "registration",
    "other",
    "after the job",
]

# Runs in the measured process (any checkout): timers around the phases, then the CLI's `train`.
CHILD = r"""
import json, os, sys, threading, time
T0 = float(os.environ["JOB_PROFILE_T0"])
import app.cli  # what `intent-studio train` imports, and what its job imports on the way
from app import worker
from app.services.models import evaluation
try:  # issue 76 moved the request to services/training; a checkout before: services/models
    from app.services.training import retrain_jobs
except ImportError:
    from app.services.models import retrain_jobs
from app.services.training import retrain
from app.services.queue import queue as _queue  # noqa: F401  (prepare_vectors imports it lazily)
import app.services.models.int8, core.bundle.onnx, core.encoding.registry, core.evaluation.oos
import core.training, core.training.fit, core.training.model_io, storage.artifacts
import storage.datasets, storage.versions
import importlib
for _name in ("app.services.training.retrain_measure", "app.services.training.retrain_serve",
              "app.services.training.retrain_int8", "app.services.training.retrain_calibrate",
              "app.worker.reporter"):
    try:  # the pipeline's phases as functions (issue 55); a checkout before has none of them
        importlib.import_module(_name)
    except ImportError:
        pass
imported = time.time()

totals, local = {}, threading.local()
marks = {"imported": imported - T0}
new_encoders, base_encoders = set(), set()
trained_on = []  # the device each training ran on (its stats)

def _add(phase, wall, cpu):
    t = totals.setdefault(phase, [0.0, 0.0, 0])
    t[0] += wall; t[1] += cpu; t[2] += 1

def timed(fn, phase):
    def wrapper(*a, **kw):
        name = phase(a, kw) if callable(phase) else phase
        stack = local.__dict__.setdefault("stack", [])
        frame = [time.perf_counter(), time.process_time(), 0.0, 0.0]
        stack.append(frame)
        try:
            out = fn(*a, **kw)
        finally:
            stack.pop()
            wall = time.perf_counter() - frame[0]
            cpu = time.process_time() - frame[1]
            _add(name, wall - frame[2], cpu - frame[3])
            if stack:
                stack[-1][2] += wall; stack[-1][3] += cpu
        return out
    wrapper.__wrapped__ = fn
    return wrapper

def patch(module, qualname, phase=None, after=None, everywhere=True):
    # wrap `module.qualname` (with `everywhere`, in every module that imported it by name too)
    mod = sys.modules.get(module)
    if mod is None:
        return
    owner, _, attr = qualname.rpartition(".")
    holder = getattr(mod, owner) if owner else mod
    original = getattr(holder, attr, None)
    if original is None:
        return
    wrapped = timed(original, phase) if phase is not None else original
    if after is not None:
        inner = wrapped
        def wrapped(*a, **kw):
            out = inner(*a, **kw)
            after(out)
            return out
    setattr(holder, attr, wrapped)
    if everywhere and not owner:
        for m in list(sys.modules.values()):
            d = getattr(m, "__dict__", None)
            if d is not None:
                for k, v in list(d.items()):
                    if v is original:
                        d[k] = wrapped

def eval_phase(a, kw):
    enc = getattr(a[0], "encoder", None)
    enc = getattr(enc, "encoder", enc)  # a cache wrapper
    if id(enc) in new_encoders:
        return "eval new"
    if id(enc) in base_encoders:
        return "eval frozen"
    return "eval active"

def mark(name):
    def after(_out):
        marks.setdefault(name, time.time() - T0)
    return after

pipeline = {}  # the retrain's named phases (issue 55), gross: what each function took
job_phases = []  # (seconds since T0, phase) each time the job's reporter named a phase

def gross(module, name, phase):
    mod = sys.modules.get(module)
    original = getattr(mod, name, None) if mod is not None else None
    if original is None or getattr(original, "__module__", None) != module:
        return  # not there, or a name it imported (a checkout's retrain imported storage's snapshot)
    def wrapper(*a, **kw):
        t, c = time.perf_counter(), time.process_time()
        try:
            return original(*a, **kw)
        finally:
            p = pipeline.setdefault(phase, [0.0, 0.0, 0])
            p[0] += time.perf_counter() - t; p[1] += time.process_time() - c; p[2] += 1
    for m in list(sys.modules.values()):
        d = getattr(m, "__dict__", None)
        if d is not None:
            for k, v in list(d.items()):
                if v is original:
                    d[k] = wrapper

for _module, _name, _phase in (
    ("app.services.training.retrain", "snapshot", "snapshot"),
    ("app.services.training.retrain", "train", "train"),
    ("app.services.training.retrain", "save", "save"),
    ("app.services.training.retrain_measure", "measure", "measure"),
    ("app.services.training.retrain_serve", "serve", "serve"),
    ("app.services.training.retrain_int8", "int8_copy", "int8"),
    ("app.services.training.retrain_serve", "register", "register"),
    ("app.services.training.retrain_calibrate", "calibrate", "calibrate"),
):
    gross(_module, _name, _phase)

_reporter = sys.modules.get("app.worker.reporter")
if _reporter is not None:
    _log = _reporter.JobReporter.log
    def _logged(self, line, *, phase=None):
        if phase is not None:
            job_phases.append((round(time.time() - T0, 3), phase))
        return _log(self, line, phase=phase)
    _reporter.JobReporter.log = _logged

patch("storage.datasets", "snapshot", "snapshot")
patch("storage.datasets", "snapshot_rows", "snapshot")
patch("core.encoding.registry", "load_sentence_transformer", "model load")
disk_loads = []  # the encoder folders read from disk (every load is one of these)
patch("core.encoding.registry", "load_sentence_transformer",
      after=lambda _m: disk_loads.append(1))
patch("core.encoding.registry", "load_encoder", "model load",
      after=lambda enc: base_encoders.add(id(enc)))
patch("core.training.model_io", "load_trained", "model load")
patch("app.services.training.retrain", "load_trained", after=lambda enc: new_encoders.add(id(enc)),
      everywhere=False)
# a checkout that evaluates the trained model in memory (issue 44): its encoder, and the copy of
# the process's base that training starts from
patch("core.training.model_io", "TrainedModel.saved_encoder",
      after=lambda enc: new_encoders.add(id(enc)))
patch("core.training.fit", "_base_copy", "model load")
patch("core.training.fit", "train_encoder", "training",
      after=lambda t: trained_on.append(str(getattr(getattr(t, "model", None), "device", None))))
patch("core.training.model_io", "TrainedModel.save", "save")
patch("app.services.models.evaluation", "evaluate_version", eval_phase)
patch("core.evaluation.oos", "calibrate_predictor", "calibration")
patch("app.services.models.int8", "export_version_int8", "int8 export")
patch("core.bundle.onnx", "parity", "parity")
patch("app.worker", "prepare_vectors", "first-card vectors")
patch("app.services.training.retrain_serve", "first_card_vectors", "first-card vectors")
patch("storage.artifacts", "tree_sha256", "registration")
patch("storage.versions", "register_version", "registration", after=mark("registered"))
patch("app.worker", "finish", "registration", after=mark("served"))
job_seconds = {}
_execute = worker.execute_job
def execute(*a, **kw):
    t = time.perf_counter(); c = time.process_time()
    marks["job start"] = time.time() - T0
    try:
        return _execute(*a, **kw)
    finally:
        job_seconds["wall"] = time.perf_counter() - t
        job_seconds["cpu"] = time.process_time() - c
        marks["job done"] = time.time() - T0
worker.execute_job = execute

from app.cli import main as cli_main
import contextlib, io
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    rc = cli_main(["train", "--project", "banking77", *json.loads(os.environ["JOB_PROFILE_ARGS"])])
marks["cli returned"] = time.time() - T0  # what follows is this bench's own epilogue
for t in threading.enumerate():  # work a checkout does after serving
    if t is not threading.current_thread() and not t.daemon:
        t.join()
try:  # as above: the request's module moved in issue 76
    from app.services.training import retrain_jobs as rj
except ImportError:
    from app.services.models import retrain_jobs as rj
try:  # the serving state (issue 59); a checkout before: AppContext(settings)
    from app.serving.state import ServingState
except ImportError:
    from app.serving.context import AppContext as ServingState
from app.config import load_settings
ctx = getattr(ServingState, "open", ServingState)(load_settings())
with ctx.db.session() as s:
    from storage import jobs as _jobs
    job = _jobs.latest_job(s)
    log = job.log
    version_id = job.model_version_id
from app.services.models import versions as vs
# PIECES: bench._checkouts
m = vs.metrics(_piece(ctx, vs.metrics), _open(ctx, "banking77"), version_id) if version_id else None
print(json.dumps({
    "rc": rc,
    "phases": {k: [round(v[0], 3), round(v[1], 3), v[2]] for k, v in totals.items()},
    "pipeline": {k: [round(v[0], 3), round(v[1], 3), v[2]] for k, v in pipeline.items()},
    "job_phases": job_phases,
    "marks": {k: round(v, 3) for k, v in marks.items()},
    "job": {k: round(v, 3) for k, v in job_seconds.items()},
    "version": version_id,
    "accuracy": m.accuracy if m else None,
    "frozen_accuracy": (m.base.accuracy if m and m.base else None),
    "int8": (m.int8 if m else None),
    "steps": ((m.extra or {}).get("steps") if m else None),
    "train_seconds": (m.train_seconds if m else None),
    "trained_on": trained_on,
    "disk_loads": len(disk_loads),
    "cuda_available": (sys.modules["torch"].cuda.is_available() if "torch" in sys.modules else None),
    "log": log[-4000:],
}), flush=True)
"""
CHILD = CHILD.replace("# PIECES: bench._checkouts\n", PIECES)


# A restart after the retrains (any checkout): the first prediction of a fresh process.
RESTART = r"""
import json, os, time
T0 = float(os.environ["JOB_PROFILE_T0"])
from app.config import load_settings
try:  # the serving state (issue 59); a checkout before: AppContext(settings)
    from app.serving.state import ServingState
except ImportError:
    from app.serving.context import AppContext as ServingState
from app.services.models import predict
# PIECES: bench._checkouts
imported = time.time() - T0
t = time.perf_counter()
ctx = getattr(ServingState, "open", ServingState)(load_settings())
context = time.perf_counter() - t
t = time.perf_counter()
first = predict.predict(_piece(ctx, predict.predict), _open(ctx, "banking77"), ["my card still has not arrived"])
first_s = time.perf_counter() - t
t = time.perf_counter()
predict.predict(_piece(ctx, predict.predict), _open(ctx, "banking77"), ["can I top up by bank transfer"])
second_s = time.perf_counter() - t
print(json.dumps({"imports": round(imported, 3), "context": round(context, 3),
                  "first": round(first_s, 3), "second": round(second_s, 4),
                  "encoded": getattr(ctx.live.cache, "encoded", None), "top": first[0]["top"]}))
"""
RESTART = RESTART.replace("# PIECES: bench._checkouts\n", PIECES)


def restart(code: Path, data: Path, device: str) -> dict[str, Any]:
    """A fresh process on ``data``: its imports, its context and its first two predictions."""
    env = environment(code, data, device)
    env["JOB_PROFILE_T0"] = repr(time.time())
    done = subprocess.run(
        [sys.executable, "-c", RESTART], cwd=code, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"restart failed (rc {done.returncode}):\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def project_csv(shared: Path, out: Path, test: int = 3080) -> Path:
    """BANKING77 10-shot seed 0 as the train split and ``test`` test questions (every one by
    default) as the test split."""
    from tests.e2e.conftest import banking77_csv

    return banking77_csv(shared, out, unlabelled=0, test=test)


def new_labels_csv(shared: Path, out: Path, n: int, seed: int) -> Path:
    """``n`` BANKING77 training questions outside the 10-shot set, with their intents, as a
    train-split CSV (the same rows for every checkout: ``seed``)."""
    import csv
    import random

    folder = shared / "banking77"
    with (folder / "train_10shot_seed0.csv").open(encoding="utf-8", newline="") as f:
        taken = {r["text"] for r in csv.DictReader(f)}
    with (folder / "train.csv").open(encoding="utf-8", newline="") as f:
        pool = [r for r in csv.DictReader(f) if r["text"] not in taken]
    with out.open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label", "split"])
        for r in random.Random(seed).sample(pool, n):
            w.writerow([r["text"], r["label"], "train"])
    return out


def cli(code: Path, data: Path, device: str, *args: str) -> None:
    """Run ``code``'s CLI with ``args`` on ``data`` (not timed): an import, a setting."""
    done = subprocess.run(
        [sys.executable, "-m", "app", *args],
        cwd=code,
        env=environment(code, data, device),
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{args[0]} failed (rc {done.returncode}):\n{done.stderr[-4000:]}")


def import_rows(code: Path, data: Path, device: str, rows: Path) -> None:
    """Import ``rows`` into the project with ``code``'s CLI (not timed)."""
    cli(code, data, device, "import", str(rows), "--project", PROJECT)


def project_settings(code: Path, data: Path, device: str, changes: list[str]) -> None:
    """Set the project's ``KEY=VALUE`` settings on ``data`` with ``code``'s CLI (not timed)."""
    cli(
        code,
        data,
        device,
        "settings",
        "--project",
        PROJECT,
        *[a for kv in changes for a in ("--set", kv)],
    )


def run_once(
    code: Path, data: Path, device: str, train_args: list[str] | None = None
) -> dict[str, Any]:
    """One ``train`` in a fresh process on ``data`` (``train_args``: more arguments of the CLI's
    ``train``, e.g. ``--method lora``); its phases, marks and the whole process."""
    env = environment(code, data, device)
    env["JOB_PROFILE_ARGS"] = json.dumps(train_args or [])
    load = load_average()
    before = os.times()
    env["JOB_PROFILE_T0"] = repr(time.time())
    t = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CHILD], cwd=code, env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - t
    after = os.times()
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(f"train failed (rc {done.returncode}):\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    result.update(process_s=round(wall, 2), process_cpu_s=round(cpu, 2), load=load)
    result["load_after"] = load_average()
    return result


def phase_rows(result: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """Wall and CPU seconds per phase of :data:`PHASES` (``other`` = the job's rest)."""
    phases: dict[str, list[float]] = result["phases"]
    rows = {name: (float(v[0]), float(v[1])) for name, v in phases.items() if name != "other"}
    marks = result["marks"]
    rows["start + imports"] = (marks["imported"], float("nan"))
    rows["cli + queue"] = (marks.get("job start", 0.0) - marks["imported"], float("nan"))
    # from the job's end to the CLI's return (its closing; a checkout timed before the mark
    # existed: to the process's exit, this bench's epilogue included)
    end = marks.get("cli returned", result["process_s"])
    rows["after the job"] = (end - marks.get("job done", 0.0), float("nan"))
    job = result.get("job", {})
    outside = ("start + imports", "cli + queue", "after the job")
    inside = [v for k, v in rows.items() if k not in outside]
    if job:
        rows["other"] = (
            job["wall"] - sum(w for w, _ in inside),
            job["cpu"] - sum(c for _, c in inside),
        )
    return rows


def pipeline_rows(result: dict[str, Any]) -> tuple[dict[str, tuple[float, float]], str]:
    """Wall and CPU seconds per phase of :data:`PIPELINE`, and how they were measured: the
    phase functions themselves (``functions``, a checkout since issue 55), or, in a checkout
    before them, the intervals between the phases its job named (``job phases``: the phase
    called ``evaluating`` is ``measure``, and so on; no CPU seconds)."""
    timed = result.get("pipeline") or {}
    if timed:
        return {k: (float(v[0]), float(v[1])) for k, v in timed.items()}, "functions"
    marks = [(float(t), JOB_PHASES.get(name, name)) for t, name in result.get("job_phases", [])]
    start, end = result["marks"].get("job start"), result["marks"].get("job done")
    if start is None or end is None:
        return {}, "job phases"
    points = [(float(start), "snapshot"), *marks, (float(end), "")]
    rows: dict[str, tuple[float, float]] = {}
    for (t, name), (t_next, _) in itertools.pairwise(points):
        wall = rows.get(name, (0.0, float("nan")))[0] + max(0.0, t_next - t)
        rows[name] = (wall, float("nan"))
    return rows, "job phases"


def summary(result: dict[str, Any]) -> dict[str, float]:
    """The totals of one run: training (the loop; and the ``train`` phase), when the version
    became active (answers: from the process's start and from the job's), when the job and the
    process were done, and what the job spent around its training until the version answered
    (the issue's "request -> new version answering, minus training", here without the app's
    queue and server)."""
    rows = phase_rows(result)
    training = rows.get("training", (0.0, 0.0))[0]
    marks = result["marks"]
    phases, _ = pipeline_rows(result)
    train_phase = phases.get("train", (float("nan"), 0.0))[0]
    active = marks.get("registered", float("nan"))
    to_active = active - marks.get("job start", float("nan"))
    return {
        "training": training,
        "train phase": train_phase,
        "version active": active,
        "job start -> active": to_active,
        "job done": marks.get("job done", float("nan")),
        "process": result["process_s"],
        "process cpu": result["process_cpu_s"],
        "around training (active)": to_active - train_phase,
        "not training (process)": result["process_s"] - training,
    }


def _median(values: list[float]) -> float:
    values = [v for v in values if v == v]  # not NaN
    return statistics.median(values) if values else float("nan")


def pipeline_table(runs: list[dict[str, Any]], labels: list[str], retrains: int) -> str:
    """The retrain's named phases x (checkout, retrain): median wall / CPU seconds, then when
    the version answered and what the job spent around its training until then."""
    cols = [(lab, r) for r in range(retrains) for lab in labels]
    head = f"{'phase':<28}" + "".join(f"{f'{lab} #{r + 1}':>20}" for lab, r in cols)
    out = [
        "the retrain's phases, median wall s / CPU s (in the order each checkout runs them)",
        head,
    ]

    def found(lab: str, r: int) -> list[dict[str, Any]]:
        return [x for x in runs if x["code"] == lab and x["retrain"] == r]

    for name in PIPELINE:
        cells = []
        for lab, r in cols:
            got = [pipeline_rows(x)[0].get(name) for x in found(lab, r)]
            timed = [v for v in got if v is not None]
            if not timed:
                cells.append(f"{'-':>20}")
                continue
            wall, cpu = _median([w for w, _ in timed]), _median([c for _, c in timed])
            cpu_s = f"{cpu:.1f}" if cpu == cpu else "-"
            cells.append(f"{wall:>12.1f} / {cpu_s:>5}")
        out.append(f"{name:<28}" + "".join(cells))
    for name, key in (
        ("job start -> version active", "job start -> active"),
        ("around training (to active)", "around training (active)"),
        ("job done (from job start)", None),
    ):
        cells = []
        for lab, r in cols:
            sums = [summary(x) for x in found(lab, r)]
            if key is None:
                starts = [x["marks"].get("job start", float("nan")) for x in found(lab, r)]
                seconds = [s["job done"] - t for s, t in zip(sums, starts, strict=True)]
            else:
                seconds = [s[key] for s in sums]
            cells.append(f"{_median(seconds):>20.1f}")
        out.append(f"{name:<28}" + "".join(cells))
    shares = []
    for lab, r in cols:
        sums = [summary(x) for x in found(lab, r)]
        ratios = [
            s["around training (active)"] / s["train phase"] for s in sums if s["train phase"]
        ]
        shares.append(f"{_median(ratios) * 100:>19.0f}%")
    out.append(f"{'around training / train':<28}" + "".join(shares))
    how = {lab: pipeline_rows(found(lab, 0)[0])[1] for lab, _ in cols if found(lab, 0)}
    out.append("measured by: " + ", ".join(f"{lab}: {m}" for lab, m in how.items()))
    return "\n".join(out)


def table(runs: list[dict[str, Any]], labels: list[str], retrains: int) -> str:
    """Phases x (checkout, retrain): median wall / CPU seconds."""
    cols = [(lab, r) for r in range(retrains) for lab in labels]
    head = f"{'phase':<24}" + "".join(f"{f'{lab} #{r + 1}':>20}" for lab, r in cols)
    out = ["median wall s / CPU s per timed function, net of those nested in it", head]

    def cell(lab: str, r: int, fn: Any) -> str:
        found = [fn(x) for x in runs if x["code"] == lab and x["retrain"] == r]
        if not found:
            return f"{'-':>20}"
        wall = _median([w for w, _ in found])
        cpu = _median([c for _, c in found])
        cpu_s = f"{cpu:.1f}" if cpu == cpu else "-"
        return f"{wall:>12.1f} / {cpu_s:>5}"

    for name in PHASES:
        out.append(
            f"{name:<24}"
            + "".join(
                cell(lab, r, lambda x, n=name: phase_rows(x).get(n, (0.0, 0.0))) for lab, r in cols
            )
        )
    for name in summary(runs[0]) if runs else []:
        if name == "process cpu":
            continue
        out.append(
            f"{name:<24}"
            + "".join(
                cell(
                    lab,
                    r,
                    lambda x, n=name: (
                        summary(x)[n],
                        summary(x)["process cpu"] if n == "process" else float("nan"),
                    ),
                )
                for lab, r in cols
            )
        )
    ratio = []
    for lab, r in cols:
        sums = [summary(x) for x in runs if x["code"] == lab and x["retrain"] == r]
        vals = [s["not training (process)"] / s["training"] for s in sums if s["training"]]
        ratio.append(f"{_median(vals) * 100:>19.0f}%")
    out.append(f"{'not training / training':<24}" + "".join(ratio))
    acc = []
    for lab, r in cols:
        accuracies = [
            x.get("accuracy") or float("nan")
            for x in runs
            if x["code"] == lab and x["retrain"] == r
        ]
        acc.append(f"{_median(accuracies):>20.4f}")
    out.append(f"{'accuracy (test)':<24}" + "".join(acc))
    loads = []
    for lab, r in cols:
        read = [x.get("disk_loads") for x in runs if x["code"] == lab and x["retrain"] == r]
        loads.append(f"{','.join(str(n) for n in read):>20}")
    out.append(f"{'encoders read from disk':<24}" + "".join(loads))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    checkout_options(ap, repeats=1, what="rounds of measurements")
    ap.add_argument("--retrains", type=int, default=2, help="retrains per round, one after another")
    ap.add_argument("--restarts", type=int, default=2, help="fresh processes predicting after")
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    # fast: ConvFiT Stage 2's name before issue 55, which every checkout (a peer too) accepts
    ap.add_argument("--method", default="fast", choices=["fast", "convfit", "lora"])
    ap.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="a TrainConfig field"
    )
    ap.add_argument(
        "--project-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a project setting set before the retrains (e.g. oos_calibration=held-out)",
    )
    ap.add_argument(
        "--new-labels",
        type=int,
        default=0,
        help="before each retrain after the first, this many more BANKING77 training questions "
        "imported with their intents (not timed): a retrain with new labels, as a designer's "
        "next one is (0: the same data again, which a deterministic training may answer from "
        "the vectors of the version before)",
    )
    ap.add_argument("--test", type=int, default=3080, help="test questions (a quick check: fewer)")
    ap.add_argument("--work", type=Path, default=None, help="where builds go (reused if there)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    work = (args.work or Path(tempfile.mkdtemp(prefix="bench-job-profile-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    codes = [peer_checkout(rev, work) for rev in args.peer]
    codes += [c.resolve() for c in args.code] or ([] if codes else [ROOT])
    train_args = ["--method", args.method] + [a for kv in args.set for a in ("--set", kv)]
    labels = [revision(c) for c in codes]
    csv = project_csv(args.data, work / f"banking77-10shot-test{args.test}.csv", args.test)
    pristine = {
        lab: build(csv, code, work / f"build-{lab}", args.device)
        for code, lab in zip(codes, labels, strict=True)
    }
    runs: list[dict[str, Any]] = []
    restarts: list[dict[str, Any]] = []
    for turn in range(args.repeats):
        for code, lab in zip(codes, labels, strict=True):
            data = work / f"data-{lab}"
            shutil.rmtree(data, ignore_errors=True)
            shutil.copytree(pristine[lab], data)
            if args.project_set:
                project_settings(code, data, args.device, args.project_set)
            for r in range(args.retrains):
                if r and args.new_labels:
                    more = new_labels_csv(args.data, work / f"new-{r}.csv", args.new_labels, r)
                    import_rows(code, data, args.device, more)
                result = run_once(code, data, args.device, train_args)
                runs.append({"code": lab, "turn": turn, "retrain": r, **result})
                s = summary(result)
                print(
                    f"{lab} #{turn} retrain {r + 1}: train phase {s['train phase']:.1f}s, "
                    f"version active {s['version active']:.1f}s, around training until "
                    f"then {s['around training (active)']:.1f}s, process {s['process']:.1f}s (cpu "
                    f"{s['process cpu']:.1f}s), load {result['load']}, trained on "
                    f"{result.get('trained_on')}, {result.get('disk_loads')} encoder(s) read "
                    "from disk",
                    flush=True,
                )
            for r in range(args.restarts):
                where = {"code": lab, "turn": turn, "restart": r, "load": load_average()}
                restarts.append({**where, **restart(code, data, args.device)})
                print(f"{lab} #{turn} restart {r + 1}: {restarts[-1]}", flush=True)
            shutil.rmtree(data, ignore_errors=True)
    print(
        f"\ndevice {args.device}, method {args.method} {args.set}, project {args.project_set}; "
        "trained on "
        f"{sorted({d for r in runs for d in r.get('trained_on') or []})}; load average at the "
        f"starts: {[r['load'] for r in runs]}"
    )
    print(pipeline_table(runs, labels, args.retrains))
    print()
    print(table(runs, labels, args.retrains))
    for r in range(args.restarts):
        for lab in labels:
            found = [x for x in restarts if x["code"] == lab and x["restart"] == r]
            if found:
                print(
                    f"restart {r + 1} {lab}: first prediction "
                    f"{_median([x['first'] for x in found]):.2f}s (context "
                    f"{_median([x['context'] for x in found]):.2f}s, imports "
                    f"{_median([x['imports'] for x in found]):.2f}s), next "
                    f"{1000 * _median([x['second'] for x in found]):.0f} ms, encoded "
                    f"{found[0]['encoded']}"
                )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        report: dict[str, Any] = {"codes": dict(zip(labels, map(str, codes), strict=True))}
        report["runs"] = runs
        report["restarts"] = restarts
        head = {"device": args.device, "method": args.method, "settings": args.set}
        head["project_settings"] = args.project_set
        args.out.write_text(json.dumps({**head, **report}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
