"""Benchmark: a designer's key and a one-text REST predict while a retrain runs (issue 63 item 3).

Issue 63's row: "key → next card (server p95) and one-text REST predict p95 while a retrain
runs: ≤ 150 ms, and predict p95 ≤ 1.5× idle". For each configuration (``--configs``), a fresh
data directory with the issue's BANKING77 project (770 train, 1,000 test, 2,000 unlabelled,
retrained once with the CLI before the server starts, as ``bench/load.py --banking77`` builds
it), ``intent-studio serve`` with its own worker (``INTENT_STUDIO_AUTO_RETRAIN=off``: only the
bench's retrain runs), settled until its warm-up is over. Then two phases:

- ``idle``: no job, ``--idle-seconds`` long;
- ``retrain``: a retrain requested over REST (``POST .../train``, the default method), measured
  from the request until the job ends (at most ``--max-retrain``); ``job cov`` is the share of
  the phase the job was running (the rest it waited in the queue or started).

In each phase, at once: one REST client predicting one text at a time every ``--every`` s
(``POST /api/v1/projects/{p}/predict``; p50/p95/max ms), and Chromium on the Label tab driven
by the scripted annotator of ``tests/e2e/annotator.py`` at ``--key-delay`` ms a key (1-3,
Enter, filters, n, t, o, s, d, u): the last key → the answer on screen (p50/p95/max ms, as
``bench/workbench.py`` measures it), and the server's side of those keys, from the event's
arrival in Gradio's queue to its answer (:mod:`bench.keylog`, inside the server process). The
worker's resident memory is sampled every 0.5 s from /proc: ``worker GB`` is its peak
(``VmHWM``), starred where it rose during the phase (the retrain's peak, not the warm-up's).
Issue 71 item 5: the retrain phase also follows the project's active version
(``GET /api/v1/projects``); when the job's version is promoted, the keys and predicts within
``PROMOTION_WINDOW`` s either side of that moment are summarised on their own ("promoted v1 ->
v2; within 30 s of it: ..."; ``promotion`` in the JSON), the issue's "key → next card across a
promotion" (server p95 ≤ 150 ms, max ≤ 1 s). The annotator's labels made so far are checked
against the stored ones (``wrong_labels``).

Configurations: ``threads``, ``nice`` and ``off`` run this checkout's app under
``INTENT_STUDIO_WORKER_SHARE`` = that word (``threads``: the worker at nice 10 and one thread
fewer while someone used the app in the last 5 s; ``nice``: nice 10 only; ``off``: neither);
``peer`` runs ``--peer`` (a checkout of the code before issue 63, e.g. ``git worktree add
--detach /work/peer-63 32488cc``) with this interpreter, its folder first on the path (as
``bench/load.py --code`` does). Each configuration gets its own copy of a data directory built
once per checkout under ``--work`` (kept between runs: ``--rebuild`` builds again).

Usage:
    python -m bench.beside_retrain --peer /work/peer-63
    python -m bench.beside_retrain --configs threads --idle-seconds 20 --max-retrain 120
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from bench import keylog, load
from bench.served import (
    PROJECT,
    App,
    Browser,
    Cpu,
    WorkerMemory,
    commit_of,
    cpu_name,
    dirty,
    fresh,
    summary,
    template,
    uptime,
)

ROOT = Path(__file__).resolve().parents[1]
SHARES = ("threads", "nice", "off")
# The Label tab's answers to a key (app/ui/queue_actions.py): what the server's side counts.
KEY_FNS = ("suggestion", "enter", "answer_with", "skip", "undo", "take_match")
# Seconds either side of a promotion whose keys and predicts count as "across" it.
PROMOTION_WINDOW = 30.0


class Predictor(threading.Thread):
    """One REST client predicting one text at a time, one every ``every`` s (a late one starts
    the next at once)."""

    def __init__(self, url: str, every: float) -> None:
        super().__init__(daemon=True)
        self.url, self.every = url, every
        self.samples: list[tuple[float, float]] = []  # (wall clock at the answer, ms)
        self.errors: list[str] = []
        self.halt = threading.Event()

    def run(self) -> None:
        path = load.rest_predict(PROJECT)
        texts = itertools.cycle(load.BANKING_QUERIES)
        with httpx.Client(base_url=self.url, timeout=60) as client:
            began = time.perf_counter()
            k = 0
            while not self.halt.is_set():
                wait = began + k * self.every - time.perf_counter()
                if wait > 0 and self.halt.wait(wait):
                    break
                started = time.perf_counter()
                try:
                    r = client.post(path, json={"text": next(texts)})
                    r.raise_for_status()
                    self.samples.append((time.time(), (time.perf_counter() - started) * 1000))
                except httpx.HTTPError as exc:
                    self.errors.append(f"{type(exc).__name__}: {str(exc)[:200]}")
                k = max(k + 1, int((time.perf_counter() - began) / self.every))


class JobWatch(threading.Thread):
    """A job's status and phase every ``every`` s, over REST, until it ends; and the project's
    active version (``GET /api/v1/projects``), to find when the job's version was promoted."""

    def __init__(self, url: str, job: int, every: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.url, self.job, self.every = url, job, every
        self.timeline: list[tuple[float, str, str]] = []  # (wall clock, status, phase) changes
        self.active: list[tuple[float, int | None]] = []  # (wall clock, active version) changes
        self.last: dict[str, Any] = {}
        self.done = threading.Event()
        self.halt = threading.Event()

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=60) as client:
            while not self.halt.is_set():
                with contextlib.suppress(httpx.HTTPError, ValueError):
                    job = client.get(f"/api/v1/jobs/{self.job}").json()
                    self.last = job
                    now = (job.get("status", "?"), job.get("phase", "?"))
                    if not self.timeline or self.timeline[-1][1:] != now:
                        self.timeline.append((time.time(), *now))
                    self._look_at_active(client)
                    if now[0] not in ("queued", "running"):
                        self.done.set()
                        return
                self.halt.wait(self.every)

    def _look_at_active(self, client: httpx.Client) -> None:
        projects = client.get("/api/v1/projects").json()["projects"]
        active = next((p["active_version"] for p in projects if p["name"] == PROJECT), None)
        if not self.active or self.active[-1][1] != active:
            self.active.append((time.time(), active))

    def promoted(self) -> tuple[float, int | None, int | None] | None:
        """When the project's active version first changed while the job ran (wall clock,
        the version before, the version after); None: it never did."""
        if len(self.active) < 2:
            return None
        (_, before), (when, after) = self.active[0], self.active[1]
        return when, before, after

    def phase_at(self, t: float) -> str:
        found = "queued"
        for when, status, phase in self.timeline:
            if when > t:
                break
            found = phase if status == "running" else status
        return found

    def running_from(self) -> float | None:
        return next((t for t, status, _ in self.timeline if status == "running"), None)


def run_phase(
    app: App,
    browser: Browser,
    every: float,
    seconds: float,
    job: JobWatch | None = None,
) -> dict[str, Any]:
    """Keys and predicts at once, ``seconds`` long, or (``job``) until the job ends."""
    began = time.time()
    load0, cpu0, machine0 = os.getloadavg()[0], app.cpu.group(), Cpu.machine()
    predictor = Predictor(app.url, every)
    predictor.start()
    memory = WorkerMemory(app.cpu)
    memory.start()
    keys0 = len(browser.bot.waits_ms)
    error = None
    while time.time() - began < seconds and not (job is not None and job.done.is_set()):
        if error is not None:  # the browser stopped: the predicts go on to the phase's end
            time.sleep(0.2)
            continue
        try:
            browser.press()
        except Exception as exc:  # what the page showed instead of an answer
            error = f"{type(exc).__name__}: {str(exc)[:600]}"
    ended = time.time()
    predictor.halt.set()
    predictor.join(60)
    worker_memory = memory.stop()
    cpu1, machine1 = app.cpu.group(), Cpu.machine()
    waits = browser.bot.waits_ms[keys0:]
    stamps = browser.stamps[len(browser.stamps) - len(waits) :] if waits else []
    server = [
        e
        for e in keylog.read(app.keys, began, ended)
        if e["fn"] in KEY_FNS or str(e["fn"]).endswith(KEY_FNS)
    ]
    predicts = [ms for _, ms in predictor.samples]
    out: dict[str, Any] = {
        "seconds": round(ended - began, 1),
        "load_start": round(load0, 2),
        "load_end": round(os.getloadavg()[0], 2),
        "machine_busy": round((machine1[0] - machine0[0]) / max(1.0, machine1[1] - machine0[1]), 3),
        "app_cpu_s": {k: round(cpu1[k] - cpu0[k], 1) for k in cpu1},
        "predict": {**summary(predicts), "errors": len(predictor.errors)},
        "predict_errors": predictor.errors[:5],
        "key": summary(waits),
        "key_server": summary([e["server_ms"] for e in server]),
        "key_server_run": summary([e["run_ms"] for e in server if e["run_ms"] is not None]),
        "key_server_fns": sorted({str(e["fn"]) for e in server}),
        "events_not_ok": sum(not e["ok"] for e in keylog.read(app.keys, began, ended)),
        "browser_error": error,
        "worker_memory": worker_memory,
    }
    if job is not None:
        running = job.running_from()
        out["job"] = {
            "id": job.job,
            "status": job.last.get("status"),
            "ended": job.done.is_set(),
            "running_s": round(ended - running, 1) if running else None,
            "covered": round((ended - max(running, began)) / (ended - began), 3)
            if running
            else 0.0,
            "timeline": [(round(t - began, 1), s, p) for t, s, p in job.timeline],
            "state": job.last.get("state"),
        }
        by_phase: dict[str, dict[str, list[float]]] = {}
        for t, ms in predictor.samples:
            by_phase.setdefault(job.phase_at(t), {"predict": [], "key": []})["predict"].append(ms)
        for t, ms in zip(stamps, waits, strict=False):
            by_phase.setdefault(job.phase_at(t), {"predict": [], "key": []})["key"].append(ms)
        out["by_job_phase"] = {
            phase: {"predict": summary(v["predict"]), "key": summary(v["key"])}
            for phase, v in by_phase.items()
        }
        out["promotion"] = _across_promotion(job, server, stamps, waits, predictor.samples)
    return out


def _across_promotion(
    job: JobWatch,
    server: list[dict[str, Any]],
    stamps: list[float],
    waits: list[float],
    predicts: list[tuple[float, float]],
) -> dict[str, Any] | None:
    """Keys and predicts from ``PROMOTION_WINDOW`` s before the project's active version
    changed to that long after it (issue 71 item 5: the queue's candidates and the pool move
    to the new space in the background meanwhile); None: no version was promoted."""
    found = job.promoted()
    if found is None:
        return None
    when, before, after = found
    lo, hi = when - PROMOTION_WINDOW, when + PROMOTION_WINDOW
    return {
        "from": before,
        "to": after,
        "window_s": PROMOTION_WINDOW,
        "key_server": summary([e["server_ms"] for e in server if lo <= e["t"] <= hi]),
        "key": summary([ms for t, ms in zip(stamps, waits, strict=False) if lo <= t <= hi]),
        "predict": summary([ms for t, ms in predicts if lo <= t <= hi]),
    }


def run_config(name: str, code: Path, data: Path, args: argparse.Namespace) -> dict[str, Any]:
    """One configuration: its server settled, the idle phase, then the retrain phase."""
    env = {"INTENT_STUDIO_AUTO_RETRAIN": "off"}
    if name in SHARES:
        env["INTENT_STUDIO_WORKER_SHARE"] = name
    app = App(code, data, **env)
    browser = None
    result: dict[str, Any] = {"config": name, "code": str(code), "commit": commit_of(code)}
    try:
        result["settled_after_s"] = app.wait_warm(args.settle)
        browser = Browser(app.url, args.key_delay)
        for _ in range(args.warm_keys):  # the page's first answers, not measured
            browser.press()
        result["idle"] = run_phase(app, browser, args.every, args.idle_seconds)
        print(f"{name} idle: {_line(result['idle'])}", flush=True)
        with httpx.Client(base_url=app.url, timeout=60) as client:
            body = {"settings": json.loads(args.train_settings)}
            r = client.post("/api/v1/projects/" + PROJECT + "/train", json=body)
            r.raise_for_status()
            job = JobWatch(app.url, r.json()["job"]["id"])
        job.start()
        result["retrain"] = run_phase(app, browser, args.every, args.max_retrain, job)
        job.halt.set()
        print(f"{name} retrain: {_line(result['retrain'])}", flush=True)
        with httpx.Client(base_url=app.url, timeout=60) as client:
            last = client.get(f"/api/v1/jobs/{job.job}").json()
        result["job_log_tail"] = (last.get("log") or "").splitlines()[-8:]
        result["wrong_labels"] = _wrong(app, browser)
    finally:
        result["browser_problems"] = browser.problems[:10] if browser else []
        if browser is not None:
            browser.close()
        app.stop()
        result["server_problems"] = app.problems()
    return result


def _wrong(app: App, browser: Browser) -> int | None:
    """Stored labels that differ from what the annotator meant (None: not readable)."""
    from tests.e2e import annotator

    try:
        api = annotator.client(app)
        return len(annotator.wrong(browser.bot.intended, annotator.stored(api)))
    except Exception:
        return None


def _line(r: dict[str, Any]) -> str:
    job = r.get("job") or {}
    return (
        f"{r['seconds']} s, predict p95 {r['predict']['p95_ms']} ms, key p95 {r['key']['p95_ms']}"
        f" ms (server {r['key_server']['p95_ms']} ms), load {r['load_start']}->{r['load_end']}"
        + (f", job {job.get('status')} covered {job.get('covered')}" if job else "")
    )


def print_table(results: list[dict[str, Any]], cpu: dict[str, Any]) -> None:
    print(
        f"\nkey -> answer on screen (browser) and its server side, one-text REST predict, idle and"
        f" while a retrain runs; {cpu['model']} ({cpu['cores']} cores,"
        f" avx512_bf16={cpu['avx512_bf16']}, amx={cpu['amx']})"
    )
    head = (
        f"{'config':8} {'phase':8} {'s':>6} {'job cov':>7} {'job s':>6} {'load':>11}"
        f" {'predict p50/p95/max ms':>23} {'x idle':>6} {'key p50/p95/max ms':>20}"
        f" {'server p50/p95/max':>20} {'keys':>5} {'err':>4} {'worker GB':>9}"
    )
    print(head)
    for r in results:
        idle_p95 = (r.get("idle") or {}).get("predict", {}).get("p95_ms")
        for phase in ("idle", "retrain"):
            p = r.get(phase)
            if not p:
                continue
            job = p.get("job") or {}
            pr, k, s = p["predict"], p["key"], p["key_server"]
            ratio = pr["p95_ms"] / idle_p95 if idle_p95 and pr["p95_ms"] else None
            cov = f"{job['covered']:.0%}" if job else "-"
            job_s = (job.get("running_s") or "-") if job else "-"
            errors = pr["errors"] + p["events_not_ok"] + (p["browser_error"] is not None)
            print(
                f"{r['config']:8} {phase:8} {p['seconds']:>6} "
                f"{cov:>7} {job_s:>6} "
                f"{p['load_start']:>5}->{p['load_end']:<5} "
                f"{_three(pr):>23} {(f'{ratio:.2f}' if ratio else '-'):>6} {_three(k):>20}"
                f" {_three(s):>20} {k['n']:>5} {errors:>4} {_memory(p):>9}"
            )
            moved = p.get("promotion")
            if phase == "retrain" and job:
                print(f"{'':8} {_promotion_line(moved)}")


def _promotion_line(moved: dict[str, Any] | None) -> str:
    if moved is None:
        return "no version was promoted in this run"
    k, s, pr = moved["key"], moved["key_server"], moved["predict"]
    return (
        f"promoted v{moved['from']} -> v{moved['to']}; within {moved['window_s']:.0f} s of it: "
        f"key {_three(k)} ms (server {_three(s)}, {s['n']} keys), predict {_three(pr)} ms"
    )


def _memory(p: dict[str, Any]) -> str:
    """The worker's peak resident memory (VmHWM) at the phase's end, GB, and ``*`` where it
    rose in the phase (the peak is the phase's, not the warm-up's)."""
    m = p.get("worker_memory") or {}
    if not m.get("hwm_gb"):
        return "-"
    return f"{m['hwm_gb']:.2f}" + ("*" if m["hwm_gb"] > m["hwm_before_gb"] else "")


def _three(s: dict[str, Any]) -> str:
    return f"{s['p50_ms']}/{s['p95_ms']}/{s['max_ms']}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default="threads,nice,off,peer")
    parser.add_argument("--peer", type=Path, help="the checkout of the code before issue 63")
    parser.add_argument("--code", type=Path, default=ROOT, help="the head's checkout")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench-beside-retrain"))
    parser.add_argument("--rebuild", action="store_true", help="build the data dirs again")
    parser.add_argument("--idle-seconds", type=float, default=60)
    parser.add_argument("--max-retrain", type=float, default=900, help="the retrain phase's cap")
    parser.add_argument(
        "--train-settings", default="{}", help='the retrain\'s settings (JSON), e.g. {"epochs": 1}'
    )
    parser.add_argument("--every", type=float, default=0.25, help="seconds between predicts")
    parser.add_argument("--key-delay", type=int, default=80, help="ms between keys")
    parser.add_argument("--warm-keys", type=int, default=5, help="keys before the idle phase")
    parser.add_argument("--settle", type=float, default=20, help="seconds at least after warm")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "beside.json")
    args = parser.parse_args()
    configs = [c for c in args.configs.split(",") if c]
    if "peer" in configs and args.peer is None:
        parser.error("the peer configuration needs --peer")
    cpu = cpu_name()
    print(f"CPU: {cpu}", flush=True)
    results: list[dict[str, Any]] = []
    run = args.work / time.strftime("run-%Y%m%d-%H%M%S")
    out = {
        "bench": "beside_retrain",
        "cpu": cpu,
        "head_dirty": dirty(args.code),
        "settings": {k: v for k, v in vars(args).items() if k not in ("out",)},
        "configs": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for name in configs:
        code = (args.peer if name == "peer" else args.code).resolve()
        source = template(args.work, code, args.data, trained=True, rebuild=args.rebuild)
        data = fresh(source, run, name)
        print(f"{name}: {code} ({commit_of(code)}), uptime: {uptime()}", flush=True)
        results.append(run_config(name, code, data, args))
        args.out.write_text(json.dumps(out, indent=2, default=str))  # what is done so far
    print_table(results, cpu)
    print(json.dumps(out, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
