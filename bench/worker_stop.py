"""Benchmark: ``docker stop`` (SIGTERM) of a worker in training, N times per checkout (issue 57
items 1 and 2): how often the job is lost and how often the worker aborts (exit 134, "terminate
called without an active exception").

Per try, in a fresh copy of one project (BANKING77's 10-shot set, 770 questions, with its test
questions): ``train --queue`` queues a long retrain (``--set epochs=...``), a worker
(``python -m app worker``, the local SQLite queue) takes it, and once the job has trained a step
the worker gets SIGTERM; the bench waits for its exit (up to ``--wait`` seconds, then SIGKILL).
The job is **kept** when it is queued again (handed back) or succeeded; **lost** when it is
still "running" with its worker gone (the reaper fails it at the next worker's start) or failed.
``INTENT_STUDIO_STOP_GRACE`` is ``--grace`` (a checkout without the setting ignores it).

Usage (the peer is main before the change; a loaded machine only slows it down):
    python -m bench.worker_stop --peer main --code . --tries 10
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._checkouts import PROJECT, build, environment, peer_checkout, revision
from bench.worker_memory import project_csv


def _job(data: Path) -> tuple[str, int, str] | None:
    """The newest job's status, step and message, read from the project's SQLite database."""
    try:
        with sqlite3.connect(data / "studio.db", timeout=30) as db:
            row = db.execute(
                "SELECT status, step, message FROM training_jobs ORDER BY id DESC LIMIT 1"
            ).fetchone()
    except sqlite3.Error:
        return None
    return None if row is None else (str(row[0]), int(row[1] or 0), str(row[2] or ""))


def one_try(code: Path, pristine: Path, data: Path, epochs: int, grace: int, wait: float) -> dict:
    shutil.rmtree(data, ignore_errors=True)
    shutil.copytree(pristine, data)
    env = {**environment(code, data, "cpu"), "INTENT_STUDIO_STOP_GRACE": str(grace)}
    env["OMP_WAIT_POLICY"] = "PASSIVE"
    # train --queue queues the job, then follows it: it is let go once the job is queued
    train = ["train", "--project", PROJECT, "--queue", "--set", f"epochs={epochs}"]
    follower = subprocess.Popen(
        [sys.executable, "-m", "app", *train],
        cwd=code,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        text=True,
    )
    assert follower.stdout is not None
    first = follower.stdout.readline()  # "[queued] ...": the row and its queue message exist
    if not first.startswith("[queued]"):
        raise RuntimeError(f"train --queue failed (rc {follower.wait()}): {first}")
    os.killpg(follower.pid, signal.SIGKILL)  # not SIGINT: that cancels the job
    follower.wait()
    log = (data / "worker.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", "worker"],
        cwd=code,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 600
    while (job := _job(data)) is None or job[0] != "running" or job[1] < 1:
        if proc.poll() is not None or time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            raise RuntimeError(f"the worker never trained: {(data / 'worker.log').read_text()}")
        time.sleep(0.3)
    stopped = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        code_ = proc.wait(wait)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        code_ = proc.wait()
        code_ = -999  # did not exit by itself
    seconds = time.monotonic() - stopped
    job = _job(data) or ("?", 0, "")
    text = (data / "worker.log").read_text(errors="replace")
    return {
        "rc": code_,
        "seconds": seconds,
        "status": job[0],
        "kept": job[0] in ("queued", "succeeded"),
        "aborted": code_ in (134, -6) or "terminate called" in text,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--code", action="append", default=[], help="a checkout to measure")
    parser.add_argument("--peer", action="append", default=[], help="a commit to measure")
    parser.add_argument("--tries", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=30, help="long enough to be stopped")
    parser.add_argument("--grace", type=int, default=2, help="INTENT_STUDIO_STOP_GRACE")
    parser.add_argument("--wait", type=float, default=120.0, help="then SIGKILL")
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="worker-stop-"))
    work.mkdir(parents=True, exist_ok=True)
    codes = [peer_checkout(rev, work) for rev in args.peer] + [Path(c).resolve() for c in args.code]
    csv_path = project_csv("10shot", work / "banking77-10shot.csv")
    rows = []
    for code in codes or [Path(__file__).resolve().parents[1]]:
        name = revision(code)
        pristine = build(csv_path, code, work / f"{name}-stop", "cpu")
        tries = []
        for n in range(args.tries):
            t = one_try(
                code, pristine, work / f"{name}-stop" / "run", args.epochs, args.grace, args.wait
            )
            print(f"{name} try {n + 1}: {t}", file=sys.stderr, flush=True)
            tries.append(t)
        rows.append(
            [
                name,
                str(len(tries)),
                str(sum(not t["kept"] for t in tries)),
                str(sum(t["aborted"] for t in tries)),
                str(sum(t["rc"] != 0 for t in tries)),
                f"{max(t['seconds'] for t in tries):.1f}",
                ", ".join(sorted({str(t["rc"]) for t in tries})),
                ", ".join(sorted({t["status"] for t in tries})),
            ]
        )
    header = ["checkout", "SIGTERMs", "job lost", "exit 134", "exit ≠ 0", "slowest exit (s)"]
    header += ["exit codes", "job after"]
    print(f"SIGTERM in training, grace {args.grace:g} s, BANKING77 10-shot, epochs {args.epochs}")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
