"""Benchmark: one designer's retrain request behind another designer's automatic retrains, one
worker (issue 71 item 2, issue 73 item 6).

Issue 71's row: "a manual retrain's wait behind another designer's automatic ones (one
worker): 12 min 52 s → ≤ one job's length". A data directory with four BANKING77 projects
(``--test`` test questions, 2,000 unlabelled, 10-shot train; imported with the CLI, never
retrained): ana designs ``a1``, ``a2`` and ``a3`` and labels one utterance in each; ben designs
``b`` (its automatic retrains off). Then one real ``intent-studio worker`` starts on it: its
watcher (:mod:`app.services.training.auto_retrain`) queues an automatic retrain of each of ana's
projects once they are quiet, and takes one. Once that job runs, ben asks for a retrain of ``b``
(what the Train tab's button and REST call: :func:`app.services.training.retrain_jobs.request_retrain`).

Measured from the jobs' rows: ben's **wait** (his request → his job running), the length of the
job that ran when he asked (``one job``, its start → its end), and the order the worker ran
them in; the goal is ``wait ≤ one job``. The automatic jobs still queued after ben's ends are
cancelled (they are not measured). ``--code PATH`` runs another checkout's worker (the peer:
main before the change), this bench's own code measuring it. Prints a table and the JSON.

Usage:
    python -m bench.fair_wait
    python -m bench.fair_wait --code /work/peer --test 1000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import load
from bench.served import commit_of, cpu_name, dirty, uptime

ROOT = Path(__file__).resolve().parents[1]
ANA_PROJECTS = ("a1", "a2", "a3")
BEN_PROJECT = "b"


def build(work: Path, code: Path, shared: Path, test: int) -> Path:
    """The four projects' data directory, built once per checkout under ``work`` (each project
    imported from the same BANKING77 file with the CLI), copied for each run."""
    from tests.e2e.conftest import banking77_csv

    folder = work / f"{commit_of(code)}-fair-{test}"
    if not (folder / "built.json").exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        load.CODE = code
        csv = banking77_csv(shared, folder / "b77.csv", unlabelled=2000, test=test)
        for name in (*ANA_PROJECTS, BEN_PROJECT):
            load.cli(folder / "data", "import", str(csv), "--project", name)
        (folder / "built.json").write_text(json.dumps({"code": str(code), "test": test}))
    run = work / time.strftime("fair-%Y%m%d-%H%M%S")
    shutil.copytree(folder / "data", run)
    return run


def setup(data: Path) -> tuple[Any, Any]:
    """Ana and Ben, their projects, ana's one label in each of hers (so their automatic
    retrains count for her), ben's automatic retrains off; this process's view of the data
    directory (its training queue: the worker's)."""
    os.environ["INTENT_STUDIO_DATA_DIR"] = str(data)
    from app.access import open_project
    from app.access.auth import add_user
    from app.config import load_settings
    from app.services.labelling import data as data_svc
    from app.services.projects import settings as settings_svc
    from app.services.projects.members import add_member
    from app.serving.state import ServingState
    from app.worker import queue_for

    state = ServingState.open(load_settings())
    state.training.enqueue = queue_for(state.settings)
    ana = add_user(state.db, "ana", "designer", "ana-password-1")
    ben = add_user(state.db, "ben", "designer", "ben-password-1")
    for name in ANA_PROJECTS:
        add_member(state.db, open_project(state.db, name), "ana", "designer")
        text = f"my card vanished ({name})"
        data_svc.add_utterance(state.db, open_project(state.db, name, ana), text, "card_arrival")
    add_member(state.db, open_project(state.db, BEN_PROJECT), "ben", "designer")
    settings_svc.change(state.live, open_project(state.db, BEN_PROJECT), {"auto_retrain": "off"})
    return state, ben


Row = dict[str, Any]


def rows(data: Path) -> list[Row]:
    """Every job's row, with its project's name and its user's (read as the worker wrote them)."""
    import sqlite3

    with sqlite3.connect(data / "studio.db", timeout=30) as db:
        db.row_factory = sqlite3.Row
        found = db.execute(
            'SELECT j.id, p.name AS project, u.name AS user, j.status, j."trigger",'
            " j.created_at, j.started_at, j.finished_at FROM training_jobs j"
            " JOIN projects p ON p.id = j.project_id LEFT JOIN users u ON u.id = j.user_id"
            " ORDER BY j.id"
        ).fetchall()
    return [dict(r) for r in found]


def seconds(stamp: str | None) -> float | None:
    """A row's time (UTC, as SQLite holds it) as epoch seconds."""
    if not stamp:
        return None
    from datetime import UTC, datetime

    return datetime.fromisoformat(stamp).replace(tzinfo=UTC).timestamp()


def span(start: str | float, end: str | float) -> float:
    """Seconds from ``start`` to ``end`` (a row's time or epoch seconds)."""
    a = start if isinstance(start, float) else seconds(start)
    b = end if isinstance(end, float) else seconds(end)
    assert a is not None and b is not None
    return round(b - a, 1)


def until(data: Path, ok: Any, timeout: float, what: str) -> list[Row]:
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        found = rows(data)
        if ok(found):
            return found
        time.sleep(0.5)
    raise TimeoutError(f"{what}: not within {timeout:.0f} s; the jobs: {rows(data)}")


def measure(code: Path, data: Path, timeout: float) -> dict[str, Any]:
    """One run (see the module): the worker started, ben's request once ana's first automatic
    job runs, until ben's job ends."""
    from app.access import open_project
    from app.services.training import retrain_jobs

    state, ben_user = setup(data)
    log = (data.parent / f"{data.name}-worker.log").open("wb")
    worker = subprocess.Popen(
        [sys.executable, "-m", "app", "--data-dir", str(data), "worker"],
        cwd=code,
        env=load.app_env(INTENT_STUDIO_DATA_DIR=str(data)),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        first = until(
            data,
            lambda js: (
                any(j["status"] == "running" for j in js)
                and sum(j["trigger"] == "auto" for j in js) == len(ANA_PROJECTS)
            ),
            timeout,
            "ana's automatic jobs queued, one running",
        )
        queued_autos = sum(j["trigger"] == "auto" for j in first)
        asked = time.time()
        mine, _ = retrain_jobs.request_retrain(
            state.training, open_project(state.db, BEN_PROJECT, ben_user), {"method": "fast"}
        )
        end = until(
            data,
            lambda js: any(j["id"] == mine.id and j["finished_at"] for j in js),
            timeout,
            "ben's job ending",
        )
    finally:
        for j in rows(data):
            if j["status"] in ("queued", "running"):
                retrain_jobs.cancel(state.db, j["id"])
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(120)
    by_id = {j["id"]: j for j in end}
    ben = by_id[mine.id]
    running = next(j for j in first if j["status"] == "running")
    ahead = by_id[running["id"]]
    started = [j for j in end if j["started_at"]]
    return {
        "automatic_jobs_queued": queued_autos,
        "ben_status": ben["status"],
        "wait_s": span(asked, ben["started_at"]),
        "ben_job_s": span(ben["started_at"], ben["finished_at"]),
        "one_job_s": span(ahead["started_at"], ahead["finished_at"]),
        "asked_after_it_started_s": span(ahead["started_at"], asked),
        "order": [
            f"{j['project']} ({j['trigger']}" + (f", {j['user']})" if j["user"] else ")")
            for j in sorted(started, key=lambda j: seconds(j["started_at"]) or 0.0)
        ],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", type=Path, default=ROOT, help="the checkout whose worker runs")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench-fair-wait"))
    parser.add_argument("--test", type=int, default=1000, help="test questions per project")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    code = args.code.resolve()
    cpu = cpu_name()
    print(f"CPU: {cpu}; {code} ({commit_of(code)}); uptime: {uptime()}", flush=True)
    data = build(args.work, code, args.data, args.test)
    load0 = os.getloadavg()[0]
    result = {
        "bench": "fair_wait",
        "cpu": cpu,
        "code": str(code),
        "commit": commit_of(code),
        "dirty": dirty(code),
        "load_start": round(load0, 2),
        **measure(code, data, args.timeout),
        "load_end": round(os.getloadavg()[0], 2),
    }
    r = result
    print(
        f"\nben's retrain request behind ana's {r['automatic_jobs_queued']} automatic retrains,"
        f" one worker; {cpu['model']} ({cpu['cores']} cores)\n"
        f"{'asked (s after the running job began)':>40} {'wait (s)':>9} {'one job (s)':>12}"
        f" {'wait / one job':>15} {'ben job (s)':>12}  order\n"
        f"{r['asked_after_it_started_s']:>40} {r['wait_s']:>9} {r['one_job_s']:>12}"
        f" {r['wait_s'] / r['one_job_s']:>15.2f} {r['ben_job_s']:>12}  {' -> '.join(r['order'])}"
    )
    text = json.dumps(result, default=str)
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
