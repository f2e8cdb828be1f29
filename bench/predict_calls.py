"""Benchmark: one-text predictions in process (what the REST micro-batch runs for a lone
request), with no HTTP in the way: ``classify_requests`` of one text, ``--calls`` times, in a
fresh process per checkout and run, on a fresh copy of a data directory whose project has a
served version (e.g. one :mod:`bench.job_profile` leaves with ``--work``). Checkouts take turns.

Prints p50 / p95 milliseconds and the process CPU per call (threads included).

Usage:
    python -m bench.predict_calls --data-dir /tmp/fc2/b599b03-3770/pristine \\
        --code /tmp/peer-wt --code . --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, os, sys, time
from app.config import load_settings
try:  # the serving state (issue 59); a checkout before: AppContext(settings)
    from app.serving.state import ServingState
except ImportError:
    from app.serving.context import AppContext as ServingState
from app.services.models import predict
project, calls = sys.argv[1], int(sys.argv[2])
ctx = getattr(ServingState, "open", ServingState)(load_settings())
texts = ["my card has not arrived yet", "how do I top up", "I was charged twice", "change my pin"]
for i in range(30):
    predict.classify_requests(ctx.live, [(project, texts[i % 4], 1)])
took = []
cpu = time.process_time()
for i in range(calls):
    t = time.perf_counter()
    predict.classify_requests(ctx.live, [(project, f"{texts[i % 4]} {i}", 1)])
    took.append(1000 * (time.perf_counter() - t))
cpu = 1000 * (time.process_time() - cpu) / calls
took.sort()
print(json.dumps({"p50": round(took[calls // 2], 2), "p95": round(took[int(calls * 0.95)], 2),
                  "cpu_ms": round(cpu, 2)}))
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--project", default="banking77")
    ap.add_argument("--code", type=Path, action="append", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--calls", type=int, default=300)
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-predict-calls-"))
    try:
        for run in range(args.runs):
            for code in args.code:
                data = work / "data"
                shutil.rmtree(data, ignore_errors=True)
                shutil.copytree(args.data_dir, data)
                env = {**os.environ, "INTENT_STUDIO_DATA_DIR": str(data), "PYTHONPATH": str(code)}
                done = subprocess.run(
                    [sys.executable, "-c", CHILD, args.project, str(args.calls)],
                    cwd=code,
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                found = json.loads(done.stdout.strip().splitlines()[-1])
                print(f"run {run + 1} {code}: {found}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
