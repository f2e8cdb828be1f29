"""Benchmark: a retrain asked for, and labels given, to a new version answering, on the device
this process finds (issue 63's GPU row: ≤ 5 s with MiniLM, ≤ 10 s with mpnet, ≤ 10 s after 20
labels); a CPU runs it too.

For each encoder of ``--encoders``, a fresh data directory with the issue's BANKING77 project
(10-shot seed 0: 770 train, 1,000 test, 2,000 unlabelled; :func:`tests.e2e.conftest.banking77_csv`)
imported with the CLI on that base encoder, never retrained; a training worker started beside
this process (``intent-studio worker``: its warm-up, its label watcher); then, in this process,
the app's own serving state (the pieces REST's routes call, without HTTP):

1. ``request``: a retrain asked for (:func:`app.services.training.retrain_jobs.request_retrain`,
   what ``POST …/train`` calls), then the app's one-text prediction every ``--poll`` s until
   what answers changes (its top neighbours' similarities: a new version answers with others);
   seconds from the request to each change and to the job's end (on a GPU the held-out
   out-of-scope calibration runs after the version serves: inside "job done").
2. ``auto``: the project's ``auto_retrain`` switched on (off until then: the imported labels
   would start one by themselves), ``--labels`` unlabelled utterances labelled with their gold intent one after
   another (:func:`app.services.labelling.data.label_utterance`, what the Label tab's answer
   stores), then the same prediction until what answers changes: seconds from the last label
   (the device's pause before an automatic retrain, the watcher's look, the first pass, its
   measurement and the switch).

``worker ready`` is from the worker's spawn to its "consuming" line (imports, encoders read,
the device's warm-up steps). The training seconds are the job log's (``trained N of M steps in
S s``): the first pass, then the whole budget's. The bench needs ``../shared/data`` (or
``--data``) and, for ``mpnet``, the encoder installed (``make mpnet``).

Usage:
    python -m bench.device_retrain --encoders minilm,mpnet --out bench/results/device.json
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROJECT = "banking77"
QUESTION = "my card still has not arrived, what should I do"


def build(data: Path, shared: Path, encoder: str, test: int) -> None:
    """The issue's project imported into ``data`` (:func:`bench.load.build_banking77`, never
    retrained, ``test`` test questions) on ``encoder``, its automatic retrains off until step 2."""
    from bench.load import build_banking77, cli

    data.mkdir(parents=True, exist_ok=True)
    build_banking77(data, shared, fresh=True, test=test)
    # off until the labels of step 2: the imported labels would start one by themselves
    settings = ["--set", f"base_encoder={encoder}", "--set", "auto_retrain=off"]
    cli(data, "settings", "--project", PROJECT, *settings)


def start_worker(data: Path) -> tuple[subprocess.Popen[bytes], Path, float]:
    log = data / "worker.log"
    began = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", "--data-dir", str(data), "--verbose", "worker"],
        cwd=ROOT,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        env={**os.environ, "INTENT_STUDIO_AUTO_RETRAIN": "on"},
    )
    while " consuming " not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.perf_counter() - began > 600:
            raise RuntimeError(f"the worker did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.1)
    return proc, log, round(time.perf_counter() - began, 2)


class App:
    """The app's serving state on ``data``, as ``serve`` opens it (this process's device)."""

    def __init__(self, data: Path) -> None:
        from app import worker
        from app.config import load_settings
        from app.serving.state import ServingState

        self.state = ServingState.open(load_settings(data, None))
        self.state.training.enqueue = worker.queue_for(self.state.settings)

    def handle(self) -> Any:
        from app.access import open_project
        from app.access.auth import LOCAL

        return open_project(self.state.db, PROJECT, LOCAL)

    def answer(self) -> tuple[float, ...]:
        from app.services.models.predict import predict_one

        found = predict_one(self.state.live, self.handle(), QUESTION, k=3)
        return tuple(round(float(n["similarity"]), 6) for n in found.get("neighbours", []))

    def auto_retrain_on(self) -> None:
        from app.services.projects import settings

        settings.change(self.state.live, self.handle(), {"auto_retrain": "on"})

    def job(self, job_id: int) -> Any:
        from app.services.training import retrain_jobs

        return retrain_jobs.job(self.state.training, job_id)

    def job_after(self, job_id: int) -> Any:
        """The project's newest job when it is newer than ``job_id``, else None."""
        from storage import jobs

        with self.state.db.session() as s:
            found = jobs.latest_job(s, self.handle().id)
        return found if found is not None and found.id > job_id else None


def follow(
    app: App,
    t0: float,
    before: tuple[float, ...],
    args: argparse.Namespace,
    job_id: int | None,
    after: int = 0,
) -> dict[str, Any]:
    """Poll the prediction from ``t0`` until the job (``job_id``, else the first one newer than
    ``after`` once it appears) ended and its last switch had time to show; every change of
    what answers."""
    seen: list[float] = []
    last = before
    appeared = done = None
    view: Any = None
    next_look = 0.0
    while time.perf_counter() - t0 < args.timeout:
        now = time.perf_counter() - t0
        answer = app.answer()
        if answer != last:
            seen.append(round(now, 2))
            last = answer
        if now >= next_look:
            next_look = now + 0.25
            view = app.job(job_id) if job_id is not None else app.job_after(after)
            if view is not None and appeared is None:
                appeared = round(now, 2)
                job_id = view.id
            if view is not None and view.status not in ("queued", "running") and done is None:
                done = round(time.perf_counter() - t0, 2)
        if done is not None and time.perf_counter() - t0 > done + 1.0:
            break
        time.sleep(args.poll)
    log = getattr(view, "log", "") or ""
    from bench.load import VERDICT

    trained = [
        (int(a), int(b), float(s))
        for a, b, s in re.findall(r"trained (\d+) of (\d+) steps in ([\d.]+) s", log)
    ]
    return {
        "job": job_id,
        "status": getattr(view, "status", None),
        "trigger": getattr(view, "trigger", None),
        "job_appears_s": appeared,
        "answering_s": seen[0] if seen else None,
        "switches_s": seen,
        "job_done_s": done,
        "trainings": trained,
        "verdicts": VERDICT.findall(log),
        "log": log,
    }


def gold(shared: Path) -> dict[str, str]:
    with (shared / "banking77" / "train.csv").open(encoding="utf-8", newline="") as f:
        return {r["text"]: r["label"] for r in csv.DictReader(f)}


def label_some(app: App, n: int, labels: dict[str, str]) -> float:
    """Label ``n`` unlabelled utterances with their gold intent; the time of the last."""
    from app.services.labelling.data import label_utterance
    from storage.tables import Utterance

    with app.state.db.session() as s:
        rows = (
            s.query(Utterance.id, Utterance.text)
            .filter(Utterance.project_id == app.handle().id, Utterance.split == "unlabelled")
            .order_by(Utterance.id)
            .limit(n)
            .all()
        )
    for uid, text in rows:
        label_utterance(app.state.db, app.handle(), uid, labels[text])
    return time.perf_counter()


def one_encoder(encoder: str, args: argparse.Namespace) -> dict[str, Any]:
    from app.access.auth import LOCAL, acting_as
    from app.services.training import retrain_jobs

    data = args.work / encoder
    build(data, args.data, encoder, args.test)
    proc, log, ready = start_worker(data)
    try:
        app = App(data)
        before = app.answer()
        with acting_as(LOCAL):
            t0 = time.perf_counter()
            view, _ = retrain_jobs.request_retrain(app.state.training, app.handle())
        request = follow(app, t0, before, args, view.id)
        print(
            f"{encoder} request: { ({k: v for k, v in request.items() if k != 'log'}) }", flush=True
        )
        app.auto_retrain_on()
        rounds, after = [], view.id
        for n in range(1, args.rounds + 1):
            t_last = label_some(app, args.labels, gold(args.data))
            # read after the labels: a new label among the question's neighbours changes the
            # answer at once, which is not a version
            auto = follow(app, t_last, app.answer(), args, None, after=after)
            after = auto["job"] or after
            rounds.append(auto)
            shown = {k: v for k, v in auto.items() if k != "log"}
            print(f"{encoder} auto round {n}: {shown}", flush=True)
        app.state.close()
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return {
        "encoder": encoder,
        "worker_ready_s": ready,
        "request": request,
        "auto": rounds,
        "worker_log_tail": log.read_text(errors="replace")[-4000:],
    }


def environment() -> dict[str, Any]:
    import platform

    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "gpu": gpu,
        "cpus": os.cpu_count(),
        "load": os.getloadavg()[0],
        "at": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def print_table(runs: list[dict[str, Any]]) -> None:
    print(
        f"{'encoder':8} {'worker ready s':>15} {'what':8} {'job appears s':>14}"
        f" {'answering s':>12} {'job done s':>11}  trainings (steps of budget: s)  switches s"
    )
    for r in runs:
        steps = [("request", r["request"])]
        steps += [(f"auto {n}", m) for n, m in enumerate(r["auto"], 1)]
        for what, m in steps:
            trained = ", ".join(f"{a}/{b}: {s}" for a, b, s in m["trainings"])
            print(
                f"{r['encoder']:8} {r['worker_ready_s']:>15} {what:8}"
                f" {m['job_appears_s'] or '-':>14} {m['answering_s'] or '-':>12}"
                f" {m['job_done_s'] or '-':>11}  {trained}  {m['switches_s']}"
            )
            for said in m["verdicts"]:
                print(f"{'':42}{said}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--encoders", default="minilm,mpnet")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--work", type=Path, default=Path("/tmp/device-retrain"))
    ap.add_argument("--labels", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=1, help="rounds of --labels labels (issue 71: 5)")
    ap.add_argument("--test", type=int, default=1000, help="test questions (3080: the whole split)")
    ap.add_argument("--poll", type=float, default=0.1)
    ap.add_argument("--timeout", type=float, default=180.0)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    head = environment()
    print(head, flush=True)
    runs = [one_encoder(e, args) for e in args.encoders.split(",")]
    print_table(runs)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"environment": head, "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
