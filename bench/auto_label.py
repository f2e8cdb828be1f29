"""Benchmark: labels typed in the Label tab, no click → a new version answering (issue 63 item 2).

Issue 63's row: "20 labels typed in the Label tab at 80 ms/key, no click → a new version
answering ≤ 60 s after the last label". This checkout's app only (the code before issue 63 has
no automatic retrain): a data directory with the issue's BANKING77 project (770 train, 1,000
test, 2,000 unlabelled), ``intent-studio serve`` with its own worker and its watcher on
(``INTENT_STUDIO_AUTO_RETRAIN=on``, the project's ``auto_retrain`` on, after 20 labels and 10 s
without one), settled until its warm-up is over. Chromium on the Label tab, the scripted
annotator of ``tests/e2e/annotator.py`` at ``--key-delay`` ms a key, labels ``--labels``
utterances (1-3, Enter, filters, n, t, o between them; s, d, u too), then nothing. A label
counts once it stays: the round's undos take back two of its twelve labels (and a delete), and
the project counts only the labels that changed something, so ``labels`` is what stayed
(``labels_typed`` what was typed, undone ones included). From the
last label's answer on screen: when the automatic job appears (``GET /api/v1/jobs/{id}`` of the
next id), when a new version answers (a REST predict of a fixed question every ``--poll`` s,
its neighbours' similarities compared with those answered at the last label, as
``bench/load.py``'s ``one_retrain`` does), when the job says its version serves, and when the
job ends. The bench's own REST calls are not someone using the app: the activity file's time
(:mod:`app.perimeter.in_use`) is set back after each to what it was, so the worker computes on
every core as it would with nobody at the app; a page's own request that moves it is kept
(``foreign``).

States (``--states``):

- ``retrained``: the project retrained once before the server starts (a CLI ``train``); one
  server, ``--repeats`` rounds one after another, each once the last one's job ended;
- ``never``: the project never retrained, a fresh data directory and server per round. Its
  imported labels (3,769 label events, no job's mark yet) already call for a retrain, so with
  the setting on from the start the worker retrains it at its first look, before any label is
  typed (``imported``, below): here the project's ``auto_retrain`` is off when the server
  starts and switched on with the CLI's ``settings`` after the round's first label; the
  retrain then starts as the product starts it, 10 s after the last label;
- ``imported``: (not in the default) that first look: the setting on from the start, no label
  typed; from the server's start: the job appearing, a version answering, the job's end.

``worker GB``: the worker's peak resident memory (``VmHWM`` from /proc, sampled every 0.5 s),
since the worker started: after round 2 of ``retrained``, the peak over two BANKING77 retrains
(issue 57's goal: <= 3 GB).

Usage:
    python -m bench.auto_label --repeats 3
    python -m bench.auto_label --states retrained --repeats 1 --timeout 300
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from bench import load
from bench.served import (
    PROJECT,
    App,
    Browser,
    WorkerMemory,
    cpu_name,
    dirty,
    fresh,
    next_job,
    summary,
    template,
    uptime,
)

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "my card still has not arrived, what should I do"
ACTIVE = ("queued", "running")


class Quietly:
    """The bench's REST calls without touching the app's activity file (see the module)."""

    def __init__(self, client: httpx.Client, data: Path) -> None:
        self.client = client
        self.path = data / "activity"
        self.mark = self._mtime()
        self.foreign = 0  # moves of the file by something else than the bench's calls

    def _mtime(self) -> float | None:
        try:
            return self.path.stat().st_mtime
        except OSError:
            return None

    def call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        now = self._mtime()
        if now != self.mark:
            self.foreign += self.mark is not None
            self.mark = now
        try:
            return fn(*args, **kwargs)
        finally:
            if self.mark is not None:
                os.utime(self.path, (self.mark, self.mark))

    def answer(self) -> tuple[float, ...]:
        return self.call(load._answer, self.client, QUESTION)

    def job(self, job_id: int) -> dict[str, Any] | None:
        r = self.call(self.client.get, f"/api/v1/jobs/{job_id}")
        return r.json() if r.status_code == 200 else None


def after(quiet: Quietly, job_id: int, began: float, poll: float, timeout: float) -> dict[str, Any]:
    """From ``began`` (the last label's answer on screen): the automatic job's appearing, its
    version answering, serving (as the job says) and its end, seconds after ``began``."""
    before = quiet.answer()
    switches: list[float] = []
    errors: list[str] = []
    last = before
    job: dict[str, Any] | None = quiet.job(job_id)
    appeared = 0.0 if job else None
    serving = done = None
    early = job is not None  # the job was there before the last label
    tick = time.time()
    while time.time() - began < timeout:
        now = round(time.time() - began, 2)
        try:
            answer = quiet.answer()
            seen = quiet.job(job_id)
        except httpx.HTTPError as exc:  # a slow answer: said, and the next poll goes on
            errors.append(f"{now} s: {type(exc).__name__} {str(exc)[:200]}")
            time.sleep(poll)
            tick = time.time()
            continue
        if answer != last:
            switches.append(now)
            last = answer
        if seen is not None:
            job = seen
            appeared = now if appeared is None else appeared
            if serving is None and job.get("model_version_id"):
                serving = now
            if done is None and job["status"] not in ACTIVE:
                done = now
        if done is not None and now > done + 2 * poll + 1:
            break  # the job ended and its last switch (if any) had time to show
        tick += poll
        time.sleep(max(0.0, tick - time.time()))
    job = job or {}
    full = re.findall(r"trained (\d+) of (\d+) steps in ([\d.]+) s", job.get("log") or "")
    return {
        "job": job.get("id"),
        "trigger": job.get("trigger"),
        "status": job.get("status"),
        "job_before_last_label": early,
        "job_appears_s": appeared,
        "answering_s": switches[0] if switches else None,
        "job_serving_s": serving,
        "job_done_s": done,
        "switches_s": switches,
        "trainings": [{"steps": int(a), "of": int(b), "s": float(s)} for a, b, s in full],
        "job_state": job.get("state"),
        "version": job.get("model_version_id"),
        "foreign_touches": quiet.foreign,
        "poll_errors": errors,
    }


def label_round(
    app: App, browser: Browser, quiet: Quietly, args: argparse.Namespace, switch_on: bool
) -> dict[str, Any]:
    """``--labels`` labels in the Label tab (the setting switched on after the first, where
    ``switch_on``), then :func:`after`."""
    job_id = quiet.call(next_job, quiet.client)
    load0 = os.getloadavg()[0]
    labels0, kept0 = browser.bot.labels, browser.kept
    keys0, began = len(browser.bot.waits_ms), time.time()
    switch: subprocess.Popen[str] | None = None
    switched = None
    while browser.kept - kept0 < args.labels:
        browser.press()
        if switch_on and switch is None and browser.bot.labels > labels0:
            switch = app.cli("settings", "--project", PROJECT, "--set", "auto_retrain=on")
        if switch is not None and switched is None and switch.poll() is not None:
            switched = time.time()
    last = time.time()
    if switch is not None and switched is None:  # still running at the last label
        switch.wait()
        switched = time.time()
    if switch is not None and switch.returncode != 0:
        raise RuntimeError(f"settings failed: {switch.stdout.read() if switch.stdout else ''}")
    waits = browser.bot.waits_ms[keys0:]
    out = {
        "load_start": round(load0, 2),
        "labels": browser.kept - kept0,
        "labels_typed": browser.bot.labels - labels0,
        "keys": len(waits),
        "labelling_s": round(last - began, 1),
        "key": summary(waits),
        "switched_on_s": round(switched - last, 1) if switched else None,
        **after(quiet, job_id, last, args.poll, args.timeout),
        "load_end": round(os.getloadavg()[0], 2),
    }
    if out["version"]:
        versions = quiet.call(quiet.client.get, f"/api/v1/projects/{PROJECT}/versions").json()[
            "versions"
        ]
        mine: dict[str, Any] = next((v for v in versions if v["version"] == out["version"]), {})
        out["version_row"] = {
            k: mine.get(k) for k in ("active", "accuracy", "serving", "train_s", "trigger", "note")
        }
    return out


def run_state(state: str, code: Path, run: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    """``--repeats`` rounds of a state (see the module)."""
    rounds = []
    trained = state == "retrained"
    source = template(args.work, code, args.data, trained, args.rebuild, test=args.test)
    servers = 1 if trained else args.repeats
    for n in range(servers):
        data = fresh(source, run, f"{state}-{n + 1}")
        if state == "never":
            load.CODE = code
            load.cli(data, "settings", "--project", PROJECT, "--set", "auto_retrain=off")
        app = App(code, data, INTENT_STUDIO_AUTO_RETRAIN="on")
        browser = None
        try:
            if state == "imported":  # no settling: the worker's first look is what is timed
                load.wait_ready(app.url, app.proc, 900)
                with httpx.Client(base_url=app.url, timeout=300) as client:
                    after_start = after(Quietly(client, data), 1, app.started, args.poll, 900)
                rounds.append({"state": state, "round": 1, **after_start})
                continue
            settled = app.wait_warm(args.settle)
            memory = WorkerMemory(app.cpu)
            memory.start()
            with httpx.Client(base_url=app.url, timeout=60) as client:
                quiet = Quietly(client, data)
                jobs_before = quiet.call(next_job, client) - 1
                browser = Browser(app.url, args.key_delay)
                for i in range(args.repeats if trained else 1):
                    print(f"{state} round {len(rounds) + 1}: {uptime()}", flush=True)
                    r = label_round(app, browser, quiet, args, switch_on=state == "never")
                    r = {"state": state, "round": len(rounds) + 1, "settled_s": settled, **r}
                    r["jobs_before"] = jobs_before
                    if r["job_done_s"] is not None:  # the job's own peak, not the next's
                        time.sleep(1)
                    r["worker_memory"] = memory.snapshot()
                    rounds.append(r)
                    print(json.dumps(r), flush=True)
                    if i + 1 < (args.repeats if trained else 1):
                        app.quiet(args.between)
        finally:
            if browser is not None:
                if rounds:
                    rounds[-1]["browser_problems"] = browser.problems[:10]
                browser.close()
            app.stop()
            if rounds:
                rounds[-1]["server_problems"] = app.problems()
    return rounds


def print_table(rounds: list[dict[str, Any]], cpu: dict[str, Any], labels: int) -> None:
    print(
        f"\n{labels} labels in the Label tab, then nothing -> the automatic retrain (seconds after"
        f" the last label's answer on screen); {cpu['model']} ({cpu['cores']} cores,"
        f" avx512_bf16={cpu['avx512_bf16']}, amx={cpu['amx']})"
    )
    print(
        f"{'state':10} {'#':>2} {'load':>11} {'labels':>6} {'keys':>5} {'label s':>7}"
        f" {'key p95':>7} {'job':>6} {'answer':>7} {'serving':>7} {'done':>7} {'status':>10}"
        f" {'trigger':>7} {'worker GB':>9} {'trainings (steps: s)':>24}  switches s"
    )
    for r in rounds:
        trainings = ", ".join(f"{t['steps']}/{t['of']}: {t['s']:.0f}" for t in r["trainings"])
        print(
            f"{r['state']:10} {r['round']:>2} {r.get('load_start', '-'):>5}->"
            f"{r.get('load_end', '-'):<5} {r.get('labels', '-'):>6} {r.get('keys', '-'):>5}"
            f" {r.get('labelling_s', '-'):>7} {(r.get('key') or {}).get('p95_ms', '-'):>7}"
            f" {_s(r['job_appears_s']):>6} {_s(r['answering_s']):>7} {_s(r['job_serving_s']):>7}"
            f" {_s(r['job_done_s']):>7} {r['status'] or '-':>10} {r['trigger'] or '-':>7}"
            f" {_memory(r):>9}"
            f" {trainings:>24}  {r['switches_s']}"
        )


def _memory(r: dict[str, Any]) -> str:
    """The worker's peak resident memory (VmHWM) so far, GB: since its start, so a round's
    value covers the retrains of the rounds before it on the same server."""
    m = r.get("worker_memory") or {}
    return f"{m['hwm_gb']:.2f}" if m.get("hwm_gb") else "-"


def _s(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", default="never,retrained", help="never, retrained, imported")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--labels", type=int, default=20)
    parser.add_argument(
        "--test", type=int, default=3080, help="test questions (3,080: BANKING77's whole split)"
    )
    parser.add_argument("--key-delay", type=int, default=80, help="ms between keys")
    parser.add_argument("--poll", type=float, default=0.5, help="seconds between predicts")
    parser.add_argument("--timeout", type=float, default=600, help="seconds after the last label")
    parser.add_argument("--settle", type=float, default=20, help="seconds at least after warm")
    parser.add_argument("--between", type=float, default=10, help="quiet seconds between rounds")
    parser.add_argument("--code", type=Path, default=ROOT, help="the checkout whose app runs")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench-beside-retrain"))
    parser.add_argument("--rebuild", action="store_true", help="build the data dirs again")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "auto_label.json")
    args = parser.parse_args()
    load.PROJECT = PROJECT  # load._answer's project
    cpu = cpu_name()
    print(f"CPU: {cpu}", flush=True)
    code = args.code.resolve()
    run = args.work / time.strftime("labels-%Y%m%d-%H%M%S")
    rounds = []
    for state in [s for s in args.states.split(",") if s]:
        rounds += run_state(state, code, run, args)
    print_table(rounds, cpu, args.labels)
    out = {
        "bench": "auto_label",
        "cpu": cpu,
        "code": str(code),
        "head_dirty": dirty(code),
        "settings": {k: str(v) for k, v in vars(args).items() if k != "out"},
        "rounds": rounds,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2, default=str))
    print(json.dumps(out, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
