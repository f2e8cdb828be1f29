"""What a queue with acknowledgements would save a team (issue 57 item 6): the window in which a
training job's queue message exists only in a worker's memory.

Huey's Redis queue hands a message over once (``dequeue`` removes it) and has no acknowledgement:
a worker killed after it took a job's message and before it claimed the job's row loses the
message; the job stays queued until the app fails it as lost (:mod:`storage.job_reaper`, a
minute or two later) and its designer retrains. Once the row is claimed the row itself is the
lease: the heartbeat, the reaper and (issue 57 item 1) the hand-back on a stop decide, with or
without acknowledgements.

On PostgreSQL and Redis started as the team tests start them (:mod:`tests.servers`), this queues
``--jobs`` jobs through the app's own queue (:class:`app.worker.HueyQueue`), then for each does
what a worker does: Huey's ``dequeue`` (the message leaves Redis), then the claim of its row in
its own transaction (:func:`app.worker.execute_job`'s first step); it times the gap between the
two, the only time a kill loses a job that an acknowledged queue would have redelivered. It
prints the gap's percentiles and the share of a retrain's time it is (a whole BANKING77 retrain
job: ``--job-seconds``, 85 s in bench/RESULTS.md, "The whole retrain job"), i.e. the chance that
a kill at a random moment of a job lands in it.

Usage:
    python -m bench.job_queue --jobs 200
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--job-seconds", type=float, default=85.0)
    args = parser.parse_args()

    from app.config import load_settings
    from app.worker import make_queue, queue_for
    from storage import jobs
    from storage.db import ROWS, Database, WriteLock
    from storage.projects import create_project
    from tests.servers import start_postgres, start_redis

    with (
        contextmanager(start_postgres)() as postgres,
        contextmanager(start_redis)() as redis_url,
    ):
        folder = Path(tempfile.mkdtemp(prefix="bench-job-queue-"))
        settings = dataclasses.replace(
            load_settings(folder), db_url=postgres.new_database(), queue_url=redis_url
        )
        db = Database(settings.database_url)
        with db.session() as s:
            project = create_project(s, "queue").id
        enqueue = queue_for(settings)
        huey, _ = make_queue(settings)
        gaps, waits = [], []
        for _ in range(args.jobs):
            with db.write(WriteLock.project(project)) as s:
                job, _ = jobs.create_job(s, project, {"method": "fast"})
            enqueue(job.id)
            polled = time.perf_counter()
            task = huey.dequeue()
            taken = time.perf_counter()
            assert task is not None and task.args == (job.id,)
            with db.write(ROWS) as s:
                claimed = jobs.claim_job(s, job.id, pid=os.getpid())
            gaps.append((time.perf_counter() - taken) * 1000)
            waits.append((taken - polled) * 1000)
            assert claimed is not None
            with db.write(ROWS) as s:
                jobs.finish_job(s, job.id, "succeeded", "measured")
        db.dispose()
    gap = np.asarray(gaps)
    out = {
        "jobs": args.jobs,
        "gap_p50_ms": round(float(np.percentile(gap, 50)), 2),
        "gap_p99_ms": round(float(np.percentile(gap, 99)), 2),
        "gap_max_ms": round(float(gap.max()), 2),
        "dequeue_p50_ms": round(float(np.percentile(waits, 50)), 2),
        "job_seconds": args.job_seconds,
        "kill_in_gap_p50": float(f"{np.percentile(gap, 50) / 1000 / args.job_seconds:.2e}"),
        "kill_in_gap_p99": float(f"{np.percentile(gap, 99) / 1000 / args.job_seconds:.2e}"),
        "load": round(os.getloadavg()[0], 1),
    }
    print("| jobs | gap p50 ms | gap p99 ms | gap max ms | share of a job (p50 / p99) | load |")
    print("|---|---|---|---|---|---|")
    print(
        f"| {out['jobs']} | {out['gap_p50_ms']} | {out['gap_p99_ms']} | {out['gap_max_ms']} | "
        f"{out['kill_in_gap_p50']:.1e} / {out['kill_in_gap_p99']:.1e} | {out['load']} |"
    )
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
