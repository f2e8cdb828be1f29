"""A team's workers share the encoding of a large import (issue 72 item 5): N workers against
one, each under the same CPU quota (a cgroup of its own, as ``bench/instances.py`` gives its
instances: ``--cpu-quota`` cores each; it needs root).

A data directory is made once: the 4k bench project (its test rows check the frozen encoder's
int8 copy, built then) and a project of ``--rows`` unlabelled logs (from the 25k dump of
``bench/dump_data.py``), none of them encoded. For each worker count (``--workers``), on a copy
of it: that many ``intent-studio worker`` processes (automatic retrains off), each in its cgroup,
consume the training queue (the local SQLite one: the same Huey code and task as a team's Redis
queue); the bench is the server's background (:class:`app.serving.row_encoding.RowSpaces` with
its ``fan_out`` set as ``serve`` sets it for a team, :func:`app.worker.encoding.sender`): it hands
out the chunks and picks the workers' vectors up from the shared embedding cache, until the
project's space holds every row. ``rows_s``: the rows a second from the first chunk sent to the
last vector picked up; ``speedup``: over one worker; ``throttled``: the share of the quota's
periods each worker used up (near 100 %: the quota bounds it, not the machine's load).

Usage:
    nice -n 10 python -m bench.encode_workers --rows 6000 --workers 1,2 --cpu-quota 0.3 \\
        --out bench/results/encode_workers.json
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.every_row import BASE_INT8, CLI, NICE, ROOT, _cpu, cli, load, py
from bench.instances import (
    cpu_cgroup,
    join_cgroup,
    remove_cgroup,
    throttled_counts,
    throttled_share,
)

PROJECT = "encode-bench"


def prepare(dump: Path, rows: int, folder: Path) -> Path:
    """The template data directory (see the module)."""
    data = folder / "template"
    seed = sorted(dump.glob("dump-4000-*.csv"))
    source = sorted(dump.glob("dump-25000-*.csv"))
    if not seed or not source:
        raise SystemExit("no dump files: run python -m bench.dump_data --sizes 4000,25000 first")
    for part in seed:
        cli(data, "import", str(part), "--project", "dump-4000")
    print("int8 copy built:", py(BASE_INT8, str(data), "dump-4000"), flush=True)
    logs = folder / "logs.csv"
    with (
        source[0].open(encoding="utf-8") as fh,
        logs.open("w", encoding="utf-8", newline="") as out,
    ):
        w = csv.writer(out)
        w.writerow(["text", "label", "split"])
        kept = (r for r in csv.DictReader(fh) if r["split"] == "unlabelled")
        for _, r in zip(range(rows), kept, strict=False):
            w.writerow([r["text"], "", "unlabelled"])
    cli(data, "import", str(logs), "--project", PROJECT)
    return data


def run(template: Path, folder: Path, workers: int, quota: float) -> dict[str, Any]:
    from app.config import load_settings
    from app.serving.row_encoding import spaces_of
    from app.serving.state import ServingState
    from app.worker.encoding import sender

    data = folder / f"workers-{workers}"
    shutil.copytree(template, data)
    env = {**os.environ, "INTENT_STUDIO_AUTO_RETRAIN": "off", "INTENT_STUDIO_WORKER_SHARE": "off"}
    groups = [cpu_cgroup(f"is-encode-{os.getpid()}-{k}", quota) for k in range(workers)]
    procs = []
    logs = []
    for k, group in enumerate(groups):
        log = (folder / f"worker-{workers}-{k}.log").open("w")
        logs.append(log)
        procs.append(
            subprocess.Popen(
                [*NICE, CLI, "--data-dir", str(data), "worker"],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                preexec_fn=functools.partial(join_cgroup, group),
            )
        )  # fmt: skip
    state = ServingState.open(load_settings(data))
    try:
        for log in logs:  # each worker consumes once it warmed up
            _wait_for(Path(log.name), "consuming")
        spaces = spaces_of(state.live)
        spaces.fan_out = sender(state.settings)
        from app.access import open_project
        from app.access.auth import LOCAL

        p = open_project(state.db, PROJECT, LOCAL)
        state.live.pool(p.id)
        before = [throttled_counts(g) for g in groups]
        load_before = load()
        started = time.monotonic()
        while spaces.step(p.id):
            time.sleep(0.2)
        wall = time.monotonic() - started
        rows = len(spaces.rows(p.id))
        after = [throttled_counts(g) for g in groups]
        return {
            "workers": workers,
            "rows": rows,
            "wall_s": round(wall, 1),
            "rows_s": round(rows / wall, 1),
            "server_encoded": state.live.cache.encoded,
            "throttled": [throttled_share(a, b) for a, b in zip(after, before, strict=True)],
            "load": f"{load_before}-{load()}",
        }
    finally:
        state.close()
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
        for group in groups:
            remove_cgroup(group)


def _wait_for(log: Path, word: str, timeout: float = 600) -> None:
    end = time.monotonic() + timeout
    while word not in log.read_text(errors="replace"):
        if time.monotonic() > end:
            raise TimeoutError(f"{log}: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--dump", type=Path, default=ROOT / "bench" / "results" / "dump")
    ap.add_argument("--rows", type=int, default=6000)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--cpu-quota", type=float, default=0.3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="encode-workers-"))
    template = prepare(args.dump, args.rows, folder)
    results = [run(template, folder, int(n), args.cpu_quota) for n in args.workers.split(",")]
    one = results[0]["rows_s"]
    for r in results:
        r["speedup"] = round(r["rows_s"] / one, 2)
    print(f"CPU {_cpu()}; {args.cpu_quota} cores per worker")
    print("workers rows  wall_s rows_s speedup server_encoded throttled        load")
    for r in results:
        shares = ",".join(f"{100 * t:.0f}%" if t is not None else "-" for t in r["throttled"])
        print(
            f"{r['workers']:>7} {r['rows']:>5} {r['wall_s']:>7} {r['rows_s']:>6} {r['speedup']:>7} "
            f"{r['server_encoded']:>14} {shares:>16} {r['load']}"
        )
    out = {"cpu": _cpu(), "cpu_quota": args.cpu_quota, "results": results}
    print(json.dumps(out))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
