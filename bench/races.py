"""Two workers racing for one job's claim, and the reaper racing a worker's end (issue 64 item 8).

The job row is the lease (ARCHITECTURE.md, "The training queue"): a queued job is claimed by one
``UPDATE … WHERE status = 'queued'`` (:func:`storage.jobs.claim_job`), and a running job whose
worker is gone is failed by one ``UPDATE … WHERE`` that asks again whether it is still running
and still silent (:func:`storage.job_reaper.reap_dead_jobs`). The unit tests check both in one
process; this runs them with real ``intent-studio worker`` processes of a code tree (``--code``),
on the team's servers (PostgreSQL, Redis and moto's S3, started as :mod:`tests.servers` starts
them: ``--backends team``) and on the single-user default (one data directory, its SQLite
database and SQLite queue: ``local``). The app's side (queueing, looking at a job) is a child
process of the same code tree (its PYTHONPATH), so a peer runs its own services.

**Claims** (``--claims`` races, one project of tiny BANKING77 data, ``--set`` for its retrain,
default ``epochs=1``): two workers wait on the queue; each race queues one retrain and delivers
its message twice (a second delivery of one job is the case the claim's ``WHERE`` exists for:
on Redis both idle workers pop one copy each within a millisecond, so both claim at once), then
waits for the job's end. Each worker logs every claim it tries (a ``bench-claim`` line from a
wrapper around :func:`storage.jobs.claim_job`: when, and whether it won). A job **runs twice**
when two claims of it won or its retrain made more than one version; it is **lost** when it did
not succeed. ``attempts``: how many races both workers tried to claim; ``gap``: the time between
the two attempts of a race (a race within a few ms is a real one).

**Reaper** (``--reaps`` tries, each with a fresh worker; odd tries end the worker, even ones kill
it): while a job runs the app looks at it in a loop (:func:`app.services.training.retrain_jobs.reap_dead`,
what every look at a job does, about 20 a second), and once per try one look is **held** between
its read of the running job and its verdict (a hook where the reaper asks whether the job's
worker is alive) while the worker's end happens, so the verdict's ``UPDATE`` always meets a row
its worker changed since the read:

* ``ends``: the worker finishes the job and exits. Local queue: once the version is registered the
  look is held, the worker gets SIGTERM (grace ``--grace``: it finishes the job, then exits), and
  the look goes on once its pid is gone (the reaper then sees a dead pid). Team: the worker is
  stopped (SIGSTOP) past the job timeout (``--job-timeout``), so the look reads a silent job; it is
  held while the worker is continued and writes (a beat or its end), then goes on.
* ``kill``: SIGKILL at a random moment of the job (``--kill-window`` of the claim race's median
  job). Local queue: the look is held across the kill. Team: the looks go on until the heartbeat's
  timeout fails the job.

A job is **lost** when it ended ``failed`` though its worker finished it (``ends``), or is still
running ``--job-timeout`` + 30 s after its worker is gone; a kill that lands after the job's end
is counted apart. ``look errors``: looks that raised (what a Train tab's poll or a REST ``GET
…/jobs/{id}`` would answer with an error).

Usage (the peer is main before the change; each try is seconds of a tiny retrain):
    python -m bench.races --code /work/peer-64-8 --code . --backends team,local
    python -m bench.races --claims 2 --reaps 2 --backends local      # a check
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
if not SHARED.exists():
    SHARED = Path("/work/shared/data")
PROJECT = "races"
ENDED = ("succeeded", "failed", "cancelled")

# The app's side, in a child of the code tree under test: one JSON command a line on stdin, one
# JSON answer a line on stdout (a held look answers twice: when it holds, when it is done).
APP = r"""
import json, os, sys, threading, time, traceback
from pathlib import Path
from app.access import open_project
from app.access.auth import LOCAL
from app.config import load_settings
try:  # the serving state (issue 59); a checkout before: AppContext(settings)
    from app.serving.state import ServingState
    open_state = ServingState.open
except ImportError:
    from app.serving.context import AppContext as open_state
from app.services.training import retrain_jobs
from app.services.projects.io import destination, import_utterances
from app.worker import queue_for
from sqlalchemy import func, select
from storage import job_reaper
from storage.tables import ModelVersion, Project, TrainingJob
from storage.utterances import NewUtterance

ctx = open_state(load_settings())
ctx.training.enqueue = queue_for(ctx.settings)
out_lock = threading.Lock()

def say(obj):
    with out_lock:
        sys.stdout.write(json.dumps(obj, default=str) + "\n")
        sys.stdout.flush()

def row(job_id):
    with ctx.db.session() as s:
        j = s.get(TrainingJob, job_id)
        versions = s.scalar(select(func.count(ModelVersion.id)).where(
            ModelVersion.project_id == j.project_id))
        return {"id": j.id, "status": j.status, "phase": j.phase, "step": j.step,
                "message": j.message, "log": j.log, "pid": j.worker_pid,
                "heartbeat": str(j.heartbeat_at), "version": j.model_version_id,
                "versions": versions}

looks = {"on": False, "n": 0, "reaped": 0, "errors": []}

def look_loop():
    while True:
        if not looks["on"]:
            time.sleep(0.02)
            continue
        try:
            looks["reaped"] += retrain_jobs.reap_dead(ctx.training)
        except Exception as exc:
            looks["errors"].append(f"{type(exc).__name__}: {exc}"[:300])
        looks["n"] += 1
        time.sleep(0.05)

threading.Thread(target=look_loop, daemon=True).start()

def held_look(job_id, pid, release, timeout):
    real = job_reaper.pid_alive
    state = {"held": False, "released": None}
    def seen():
        r = row(job_id)
        return (r["status"], r["heartbeat"])
    def hook(p):
        if p != pid or state["held"]:
            return real(p) if ctx.settings.local_workers else True
        state["held"] = True
        before = seen()
        say({"event": "holding", "row": before})
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if release == "gone" and not real(p):
                state["released"] = "pid gone"
                break
            if release == "written" and seen() != before:
                state["released"] = "row written"
                break
            time.sleep(0.005)
        state["after"] = seen()
        # a worker on another machine: its pid tells nothing (the reaper judges the heartbeat)
        return real(p) if ctx.settings.local_workers else True
    n, error = 0, None
    try:
        if ctx.settings.local_workers:  # what every look does: reap_dead, pid_alive asked
            job_reaper.pid_alive = hook
            try:
                n = retrain_jobs.reap_dead(ctx.training)
            finally:
                job_reaper.pid_alive = real
        else:  # reap_dead's own call, with the hook where it would ask about the pid
            with ctx.db.session() as s:
                n = job_reaper.reap_dead_jobs(s, alive=hook,
                                              dead_after=ctx.settings.job_timeout)
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"[:300]
    return {"event": "looked", "held": state["held"], "released": state["released"],
            "reaped": n, "error": error, "before": state.get("after")}

for line in sys.stdin:
    cmd = json.loads(line)
    op = cmd["op"]
    try:
        if op == "project":
            made = [NewUtterance(t, (i,) if i else (), s) for t, i, s in cmd["rows"]]
            import_utterances(ctx.db, destination(ctx.db, cmd["name"]), made)
            say({"ok": True})
        elif op == "queue":
            p = open_project(ctx.db, cmd["project"], LOCAL)
            view, created = retrain_jobs.request_retrain(ctx.training, p, cmd["config"])
            for _ in range(cmd["deliveries"] - 1):
                ctx.training.enqueue(view.id)  # the same job's message once more
            say({"job": view.id, "created": created, "at": time.time()})
        elif op == "job":
            say(row(cmd["id"]))
        elif op == "looks":
            looks["on"] = cmd["on"]
            say({k: v for k, v in looks.items()})
            if cmd.get("reset"):
                looks.update(n=0, reaped=0, errors=[])
        elif op == "held":
            say(held_look(cmd["id"], cmd["pid"], cmd["release"], cmd["timeout"]))
        elif op == "quit":
            say({"ok": True})
            break
    except Exception as exc:
        say({"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-2000:]})
ctx.close()
"""

# A worker as `intent-studio -v worker` runs it, every claim it tries logged as one line.
WORKER = r"""
import json, os, runpy, sys, time
import storage.jobs as jobs
_claim = jobs.claim_job
def claim_job(s, job_id, *, pid):
    t0 = time.time()
    got = _claim(s, job_id, pid=pid)
    print("bench-claim " + json.dumps({"job": job_id, "pid": pid, "t0": t0, "t1": time.time(),
                                       "won": got is not None}), file=sys.stderr, flush=True)
    return got
jobs.claim_job = claim_job
sys.argv = ["intent-studio", "-v", "worker"]
runpy.run_module("app", run_name="__main__", alter_sys=True)
"""


def tiny_rows(intents: int = 6, train: int = 8, test: int = 3) -> list[tuple[str, str, str]]:
    """A few BANKING77 intents (``train`` labelled and ``test`` test questions each)."""
    folder = SHARED / "banking77"
    if not (folder / "train.csv").exists():
        return [
            (f"utterance {k} about topic {i}", f"topic_{i}", "train" if k < train else "test")
            for i in range(intents)
            for k in range(train + test)
        ]

    def read(name: str) -> list[dict[str, str]]:
        with (folder / name).open(encoding="utf-8", newline="") as fh:
            return list(csv.DictReader(fh))

    picked = sorted({r["label"] for r in read("train.csv")})[:intents]
    rows = []
    for split, name, n in (("train", "train.csv", train), ("test", "test.csv", test)):
        for label in picked:
            rows += [(r["text"], label, split) for r in read(name) if r["label"] == label][:n]
    return rows


class App:
    """The app's side: a child process of the code tree, answering one JSON line per command."""

    def __init__(self, code: Path, env: dict[str, str], log: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", APP],
            cwd=code,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log.open("ab"),
            text=True,
        )
        self.log = log

    def send(self, op: str, **kw: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, **kw}) + "\n")
        self.proc.stdin.flush()

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the app's side exited:\n{self.log.read_text()[-3000:]}")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer and "trace" in answer:
            raise RuntimeError(f"{answer['error']}\n{answer['trace']}")
        return answer

    def ask(self, op: str, **kw: Any) -> dict[str, Any]:
        self.send(op, **kw)
        return self.read()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.ask("quit")
                self.proc.wait(30)
            except (RuntimeError, OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(10)


class Worker:
    """``intent-studio -v worker`` of a code tree (with the claim logged), in its own folder."""

    def __init__(self, code: Path, env: dict[str, str], folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.log = folder / "worker.log"
        self.mark = self.log.stat().st_size if self.log.exists() else 0
        env = {**env}
        if "INTENT_STUDIO_DB_URL" in env:  # a team's worker: its own folder for its caches
            env["INTENT_STUDIO_DATA_DIR"] = str(folder / "data")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WORKER],
            cwd=folder,
            env=env,
            stdout=self.log.open("ab"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.pid = self.proc.pid

    def text(self) -> str:
        with self.log.open("rb") as fh:
            fh.seek(self.mark)
            return fh.read().decode(errors="replace")

    def wait_ready(self, timeout: float = 900) -> float:
        """Until it consumes the queue and its warm-up (a background thread) trained its step:
        a job it takes then starts at once."""
        began = time.monotonic()
        while (
            " consuming " not in (text := self.text())
            or "INFO core.training.warm: warmed " not in text
        ):
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited {self.proc.returncode}:\n{self.text()[-3000:]}")
            if time.monotonic() - began > timeout:
                raise RuntimeError(f"worker not ready after {timeout:.0f} s")
            time.sleep(0.2)
        return time.monotonic() - began

    def claims(self) -> list[dict[str, Any]]:
        return [
            json.loads(line.split("bench-claim ", 1)[1])
            for line in self.text().splitlines()
            if "bench-claim " in line
        ]

    def signal(self, sig: int) -> None:
        if self.proc.poll() is None:
            os.kill(self.pid, sig)

    def stop(self, wait: float = 120) -> int | None:
        if self.proc.poll() is None:
            self.signal(signal.SIGCONT)
            self.signal(signal.SIGTERM)
            try:
                self.proc.wait(wait)
            except subprocess.TimeoutExpired:
                os.killpg(self.pid, signal.SIGKILL)
                self.proc.wait(10)
        return self.proc.returncode


def wait_for(
    what: str, check: Callable[[], Any], timeout: float, every: float = 0.1
) -> Any:  # the first true value of check()
    end = time.monotonic() + timeout
    while not (got := check()):
        if time.monotonic() > end:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(every)
    return got


# --- where the processes run ---------------------------------------------------------------


def base_env(code: Path, args: argparse.Namespace) -> dict[str, str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(code),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "OMP_WAIT_POLICY": "PASSIVE",
        "INTENT_STUDIO_DEVICE": "cpu",
        "INTENT_STUDIO_JOB_TIMEOUT": str(args.job_timeout),
        "INTENT_STUDIO_STOP_GRACE": str(args.grace),
        # no retrain but the bench's own (a worker would queue one for the imported labels)
        "INTENT_STUDIO_AUTO_RETRAIN": "off",
    }
    for name in ("INTENT_STUDIO_DB_URL", "INTENT_STUDIO_QUEUE_URL", "INTENT_STUDIO_ARTIFACTS_URL"):
        env.pop(name, None)
    return env


@contextmanager
def deployment(
    backend: str, code: Path, servers: dict[str, Any], work: Path, args: argparse.Namespace
) -> Iterator[tuple[dict[str, str], Path]]:
    """The environment every process of one run gets (a fresh database, queue and bucket, or a
    fresh data directory), and the folder the app's side runs in."""
    env = base_env(code, args)
    app_dir = work / "app"
    if backend == "team":
        pg, s3 = servers["postgres"], servers["s3"]
        name = f"races_{os.getpid()}_{int(time.time() * 1000) % 10**9}"
        pg.execute(f"CREATE DATABASE {name}")  # empty: the code under test migrates it
        import redis

        redis.Redis.from_url(servers["redis"]).flushdb()
        env.update(
            INTENT_STUDIO_DB_URL=pg.url(name),
            INTENT_STUDIO_QUEUE_URL=servers["redis"],
            INTENT_STUDIO_ARTIFACTS_URL=f"s3://{s3.new_bucket()}/studio",
            **s3.env(),
        )
    env["INTENT_STUDIO_DATA_DIR"] = str(app_dir / "data")  # local: the workers share it
    yield env, app_dir


# --- the claim races -------------------------------------------------------------------------


def claim_races(
    code: Path, backend: str, servers: dict[str, Any], work: Path, args: argparse.Namespace
) -> dict[str, Any]:
    config = {"method": "fast", **args.config}
    races: list[dict[str, Any]] = []
    with ExitStack() as stack, deployment(backend, code, servers, work, args) as (env, app_dir):
        app_dir.mkdir(parents=True, exist_ok=True)
        app = App(code, env, app_dir / "app.log")
        stack.callback(app.close)
        app.ask("project", name=PROJECT, rows=tiny_rows())
        workers = [Worker(code, env, work / f"worker-{k}") for k in range(2)]
        for w in workers:
            stack.callback(w.stop)
        ready = [w.wait_ready() for w in workers]
        for n in range(args.claims):
            began = time.monotonic()
            job = app.ask("queue", project=PROJECT, config=config, deliveries=2)["job"]

            def ended(job: int = job) -> dict[str, Any] | None:
                r = app.ask("job", id=job)
                return r if r["status"] in ENDED else None

            end = wait_for(f"job {job}", ended, args.job_limit, 0.2)
            seconds = time.monotonic() - began

            def attempts(job: int = job) -> list[dict[str, Any]]:
                found = [c for w in workers for c in w.claims() if c["job"] == job]
                return found if len(found) >= 2 else []

            try:  # the second delivery's claim (on a polled SQLite queue: within a second)
                tried = wait_for("both attempts", attempts, 5.0)
            except TimeoutError:
                tried = [c for w in workers for c in w.claims() if c["job"] == job]
            before = races[-1]["versions"] if races else 0
            t0s = sorted(c["t0"] for c in tried)
            race = {
                "job": job,
                "status": end["status"],
                "message": end["message"],
                "wins": sum(c["won"] for c in tried),
                "attempts": len(tried),
                "workers": len({c["pid"] for c in tried}),
                "gap_ms": round((t0s[1] - t0s[0]) * 1000, 2) if len(t0s) > 1 else None,
                "overlap": len(tried) > 1
                and max(c["t0"] for c in tried) < min(c["t1"] for c in tried),
                "versions": end["versions"],
                "new_versions": end["versions"] - before,
                "seconds": round(seconds, 1),
            }
            races.append(race)
            print(f"  claim race {n + 1}: {json.dumps(race)}", file=sys.stderr, flush=True)
        for w in workers:
            w.stop()
    twice = [r for r in races if r["wins"] > 1 or r["new_versions"] > 1]
    lost = [r for r in races if r["status"] != "succeeded"]
    gaps = [r["gap_ms"] for r in races if r["gap_ms"] is not None]
    return {
        "races": len(races),
        "double_runs": len(twice),
        "lost": len(lost),
        "both_tried": sum(r["workers"] == 2 for r in races),
        "overlapping": sum(bool(r["overlap"]) for r in races),
        "gap_ms_median": round(statistics.median(gaps), 2) if gaps else None,
        "gap_ms_max": max(gaps) if gaps else None,
        "job_s_median": round(statistics.median(r["seconds"] for r in races), 1),
        "worker_ready_s": [round(s, 1) for s in ready],
        "detail": races,
    }


# --- the reaper race -------------------------------------------------------------------------


def reaper_try(
    app: App,
    code: Path,
    env: dict[str, str],
    backend: str,
    mode: str,
    folder: Path,
    job_s: float,
    rng: random.Random,
    args: argparse.Namespace,
) -> dict[str, Any]:
    config = {"method": "fast", **args.config}
    worker = Worker(code, env, folder)
    try:
        worker.wait_ready()
        app.ask("looks", on=not (backend == "team" and mode == "ends"), reset=True)
        job = app.ask("queue", project=PROJECT, config=config, deliveries=1)["job"]
        wait_for("claimed", lambda: app.ask("job", id=job)["status"] != "queued", 300, 0.05)
        held: dict[str, Any] | None = None
        worker_ended_job = None
        if mode == "ends":
            # once its version is registered: what is left is its record and its worker's exit
            def late() -> bool:
                r = app.ask("job", id=job)
                return r["version"] is not None or r["status"] in ENDED

            wait_for("a registered version", late, args.job_limit, 0.05)
            if backend == "team":  # silent past the timeout: the look reads a dead job
                worker.signal(signal.SIGSTOP)
                time.sleep(args.job_timeout + 1.5)
                app.send("held", id=job, pid=worker.pid, release="written", timeout=60)
                holding = app.read()
                worker.signal(signal.SIGCONT)
            else:
                app.send("held", id=job, pid=worker.pid, release="gone", timeout=args.grace + 60)
                holding = app.read()
                worker.signal(signal.SIGTERM)  # it finishes its job within the grace, then exits
            held = {**(app.read() if holding.get("event") == "holding" else holding)}
            held["holding"] = holding.get("row")
            worker_ended_job = True
            if backend == "team":  # its job is done: it exits as a stopped worker does
                worker.signal(signal.SIGTERM)
        else:
            delay = rng.uniform(0.1, args.kill_window) * job_s
            time.sleep(delay)
            if backend == "team":
                worker.signal(signal.SIGKILL)
            else:
                app.send("held", id=job, pid=worker.pid, release="gone", timeout=60)
                holding = app.read()
                worker.signal(signal.SIGKILL)
                held = {**(app.read() if holding.get("event") == "holding" else holding)}
                held["holding"] = holding.get("row")
        worker.proc.wait(args.grace + 60)
        gone_at = time.monotonic()
        app.ask("looks", on=True)

        def settled() -> dict[str, Any] | None:
            r = app.ask("job", id=job)
            return r if r["status"] in ENDED else None

        try:
            end = wait_for("the job's end", settled, args.job_timeout + 30, 0.2)
        except TimeoutError:
            end = app.ask("job", id=job)
        settle_s = time.monotonic() - gone_at
        looks = app.ask("looks", on=False)
        finished_by_worker = "succeeded" in worker.text() or end["status"] == "succeeded"
        if mode == "kill":
            # whether the job had ended before the kill: not a race with the reaper
            worker_ended_job = end["status"] == "succeeded"
        lost = end["status"] not in ENDED or (mode == "ends" and end["status"] != "succeeded")
        return {
            "mode": mode,
            "job": job,
            "status": end["status"],
            "message": end["message"],
            "lost": lost,
            "ended_before_kill": mode == "kill" and bool(worker_ended_job),
            "worker_rc": worker.proc.returncode,
            "held": held,
            "looks": looks["n"],
            "look_errors": looks["errors"],
            "settle_s": round(settle_s, 1),
            "finished_by_worker": finished_by_worker,
        }
    finally:
        worker.stop(10)


def reaper_races(
    code: Path,
    backend: str,
    servers: dict[str, Any],
    work: Path,
    args: argparse.Namespace,
    job_s: float,
) -> dict[str, Any]:
    rng = random.Random(args.seed)
    tries: list[dict[str, Any]] = []
    with ExitStack() as stack, deployment(backend, code, servers, work, args) as (env, app_dir):
        app_dir.mkdir(parents=True, exist_ok=True)
        app = App(code, env, app_dir / "app.log")
        stack.callback(app.close)
        app.ask("project", name=PROJECT, rows=tiny_rows())
        for n in range(args.reaps):
            mode = "ends" if n % 2 == 0 else "kill"
            t = reaper_try(app, code, env, backend, mode, work / "worker", job_s, rng, args)
            tries.append(t)
            print(f"  reaper try {n + 1}: {json.dumps(t)}", file=sys.stderr, flush=True)
    held = [t["held"] for t in tries if t["held"]]
    return {
        "tries": len(tries),
        "ends": sum(t["mode"] == "ends" for t in tries),
        "kills": sum(t["mode"] == "kill" for t in tries),
        "lost": sum(t["lost"] for t in tries),
        "held_looks": sum(bool(h.get("held")) for h in held),
        "held_reaped": sum(int(h.get("reaped") or 0) for h in held),
        "held_errors": [h["error"] for h in held if h.get("error")],
        "look_errors": sum(len(t["look_errors"]) for t in tries),
        "looks": sum(t["looks"] for t in tries),
        "kills_after_end": sum(t["ended_before_kill"] for t in tries),
        "statuses": " ".join(f"{t['mode']}:{t['status']}" for t in tries),
        "detail": tries,
    }


# --- the run -----------------------------------------------------------------------------------


def revision(code: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(code), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    dirty = subprocess.run(
        ["git", "-C", str(code), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return (done.stdout.strip() or code.name) + ("+" if dirty else "")


def print_tables(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    claims = [r for r in rows if r["what"] == "claims"]
    reaps = [r for r in rows if r["what"] == "reaper"]
    if claims:
        print(
            f"\nTwo workers, {args.claims} jobs each delivered twice ({args.config or 'epochs=1'})"
        )
        print(
            "| code | backend | races | double runs | lost | both tried | overlapping | "
            "gap ms p50 / max | job s p50 | load |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in claims:
            print(
                f"| {r['code']} | {r['backend']} | {r['races']} | {r['double_runs']} | "
                f"{r['lost']} | {r['both_tried']} | {r['overlapping']} | "
                f"{r['gap_ms_median']} / {r['gap_ms_max']} | {r['job_s_median']} | {r['load']} |"
            )
    if reaps:
        print(f"\nThe reaper against a worker's end, {args.reaps} tries (ends / kill -9 in turn)")
        print(
            "| code | backend | tries (ends / kill) | lost | held looks | reaped by a held look | "
            "look errors (of looks) | kills after the end | load |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for r in reaps:
            print(
                f"| {r['code']} | {r['backend']} | {r['tries']} ({r['ends']} / {r['kills']}) | "
                f"{r['lost']} | {r['held_looks']} | {r['held_reaped']} | "
                f"{r['look_errors'] + len(r['held_errors'])} ({r['looks']}) | "
                f"{r['kills_after_end']} | {r['load']} |"
            )


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            return next(line.split(":", 1)[1].strip() for line in fh if "model name" in line)
    except (OSError, StopIteration):
        return "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--code", action="append", type=Path, help="a code tree (repeatable)")
    parser.add_argument("--backends", default="team,local", help="team and/or local")
    parser.add_argument("--races", default="claims,reaper", help="claims and/or reaper")
    parser.add_argument("--claims", type=int, default=10)
    parser.add_argument("--reaps", type=int, default=10)
    parser.add_argument("--set", action="append", default=[], help="KEY=VALUE for the retrain")
    parser.add_argument("--job-timeout", type=int, default=6, help="INTENT_STUDIO_JOB_TIMEOUT")
    parser.add_argument("--grace", type=int, default=120, help="INTENT_STUDIO_STOP_GRACE")
    parser.add_argument("--kill-window", type=float, default=0.9, help="of a job's seconds")
    parser.add_argument("--job-seconds", type=float, default=0.0, help="else the claims' median")
    parser.add_argument("--job-limit", type=float, default=600.0, help="one job's longest wait")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, help="keep the processes' folders here")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "races.json")
    args = parser.parse_args(argv)
    args.config = {}
    for kv in args.set or ["epochs=1"]:
        key, _, value = kv.partition("=")
        args.config[key] = json.loads(value) if value[:1].isdigit() else value
    codes = [c.resolve() for c in (args.code or [ROOT])]
    backends = [b for b in args.backends.split(",") if b]
    which = [r for r in args.races.split(",") if r]
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-races-"))
    rows: list[dict[str, Any]] = []
    with ExitStack() as running:
        servers: dict[str, Any] = {}
        if "team" in backends:
            from tests.servers import start_postgres, start_redis, start_s3

            servers["postgres"] = running.enter_context(contextmanager(start_postgres)())
            servers["redis"] = running.enter_context(contextmanager(start_redis)())
            servers["s3"] = running.enter_context(contextmanager(start_s3)())
        if args.work is None:
            running.callback(shutil.rmtree, work, ignore_errors=True)
        for backend in backends:
            for code in codes:
                name = revision(code)
                job_s = args.job_seconds
                folder = work / f"{code.name}-{backend}"
                shutil.rmtree(folder, ignore_errors=True)
                for what in which:
                    load = os.getloadavg()[0]
                    print(f"{name} {backend} {what}, load {load:.1f}", file=sys.stderr, flush=True)
                    if what == "claims":
                        got = claim_races(code, backend, servers, folder / what, args)
                        job_s = job_s or got["job_s_median"]
                    else:
                        got = reaper_races(
                            code, backend, servers, folder / what, args, job_s or 10.0
                        )
                    got.update(
                        what=what,
                        code=name,
                        backend=backend,
                        load=f"{load:.1f}->{os.getloadavg()[0]:.1f}",
                    )
                    rows.append(got)
                    summary = {k: v for k, v in got.items() if k != "detail"}
                    print(json.dumps(summary), file=sys.stderr, flush=True)
    print(f"CPU: {cpu_name()}, {os.cpu_count()} cores")
    print_tables(rows, args)
    settings = {k: str(v) for k, v in vars(args).items()}
    text = json.dumps({"bench": "races", "cpu": cpu_name(), "args": settings, "rows": rows})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
