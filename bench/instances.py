"""Two app instances against one (issue 57 item 5): scripted annotators labelling through REST.

Starts PostgreSQL, Redis and an S3 server the way the team tests do (:mod:`tests.servers`), then
for each code tree (``--code``, default this checkout) and each instance count (``--instances``,
default ``1,2``): a fresh database and bucket; ``--projects`` projects of ``--texts`` utterances
each (BANKING77's, split between the projects with their intents, from ``../shared/data``; made-up
ones without it), one labelled example per intent and the rest unlabelled; ``--annotators`` users,
each a designer in one project (in turn) with an API token; then that many ``serve
--multi-user --no-worker`` processes of the code on one PostgreSQL, Redis and bucket, waited for
until warm. Each annotator labels in a loop for ``--seconds`` (after ``--warmup`` seconds not
counted): ``POST /api/v1/projects/{p}/label`` of a random utterance of its project with a random
intent of it, sending each request to the next instance in turn (a load balancer's round robin:
REST needs no sticky sessions). Prints a table (labels per second, p50/p95/p99 of one label,
errors, the speed-up over one instance of the same code) and the same as JSON.

Goal: two instances >= 1.8x one, p95 <= 200 ms. It needs a quiet machine: the load generator,
PostgreSQL and the instances share its cores (the table notes the load average before and after).

``--cpu-quota CORES`` gives every instance the same CPU quota (each ``serve`` process and its
children in a cgroup of its own: cgroups v2's ``cpu.max`` where the unified hierarchy has the
``cpu`` controller, else v1's ``cpu.cfs_quota_us`` under ``/sys/fs/cgroup/cpu``; it needs root),
so one instance at N cores is compared with two at N cores each while PostgreSQL, Redis, S3 and
the load generator keep the rest of the machine: on a 2-core machine, ``--cpu-quota 0.4`` leaves
them 1.2 cores. ``throttled`` is the share of the quota's periods in which an instance used its
whole quota (near 100 %: the quota, not the app, bounds it).

Usage (the peer is main before the change, in the same run):
    mkdir -p /tmp/peer-main && git archive <main before the change> | tar -x -C /tmp/peer-main
    python -m bench.instances --code /tmp/peer-main --code . --annotators 20 --projects 5
    python -m bench.instances --annotators 4 --projects 2 --seconds 5 --warmup 1  # a check
    python -m bench.instances --code /work/peer --code . --cpu-quota 0.4   # equal CPU quotas
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import functools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BANKING = ROOT.parent / "shared" / "data" / "banking77" / "train.csv"
PASSWORD = "bench-annotator-password"

# Run with the code tree's own services (its PYTHONPATH), so a peer sets up what it can read.
SETUP = """
import dataclasses, json, sys
from pathlib import Path
from app.access import auth, open_project
from app.config import load_settings
try:  # the serving state (issue 59); a checkout before: AppContext(settings)
    from app.serving.state import ServingState
except ImportError:
    from app.serving.context import AppContext as ServingState
from app.services.projects.io import destination, import_utterances
from app.services.projects.members import add_member
from storage.utterances import NewUtterance

spec = json.loads(Path(sys.argv[2]).read_text())
settings = dataclasses.replace(load_settings(Path(sys.argv[1])), multi_user=True)
ctx = getattr(ServingState, "open", ServingState)(settings)
auth.ensure_admin(ctx.db, "bench-admin-password")
for name, rows in spec["projects"].items():
    seen, made = set(), []
    for text, intent in rows:
        first = intent not in seen
        seen.add(intent)
        made.append(NewUtterance(text, (intent,) if first else (), "train" if first else "unlabelled"))
    import_utterances(ctx.db, destination(ctx.db, name), made)
tokens = {}
for user, project in spec["annotators"].items():
    auth.add_user(ctx.db, user, "designer", spec["password"])
    add_member(ctx.db, open_project(ctx.db, project), user)
    tokens[user] = auth.issue_token(ctx.db, user)
ctx.close()
print(json.dumps(tokens))
"""


def banking_rows() -> list[tuple[str, str]]:
    if not BANKING.exists():
        return [(f"utterance {i} about topic {i % 60}", f"topic_{i % 60}") for i in range(6000)]
    with BANKING.open(newline="", encoding="utf-8") as fh:
        return [(r["text"], r["label"]) for r in csv.DictReader(fh)]


def project_rows(projects: int, texts: int) -> dict[str, list[tuple[str, str]]]:
    """``projects`` projects of ``texts`` utterances, the intents split between them."""
    rows = banking_rows()
    intents = sorted({label for _, label in rows})
    out = {}
    for j in range(projects):
        mine = set(intents[j::projects])
        chosen = [r for r in rows if r[1] in mine]
        random.Random(j).shuffle(chosen)
        out[f"team-{j}"] = chosen[:texts]
    return out


def server_env(code: Path, urls: dict[str, str], env: dict[str, str]) -> dict[str, str]:
    return {
        **os.environ,
        **env,
        "PYTHONPATH": str(code),
        "INTENT_STUDIO_DB_URL": urls["db"],
        "INTENT_STUDIO_QUEUE_URL": urls["queue"],
        "INTENT_STUDIO_ARTIFACTS_URL": urls["artifacts"],
        "INTENT_STUDIO_ADMIN_PASSWORD": "bench-admin-password",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }


def wait_warm(log: Path, proc: subprocess.Popen[bytes], timeout: float = 900) -> None:
    """Until the server says its encoders, pools and queues are ready (it prints ``Warm:``)."""
    end = time.monotonic() + timeout
    while "Warm:" not in log.read_text(errors="replace"):
        if proc.poll() is not None:
            raise RuntimeError(f"server exited {proc.returncode}:\n{log.read_text()[-3000:]}")
        if time.monotonic() > end:
            raise RuntimeError(f"server not warm after {timeout:.0f} s")
        time.sleep(0.5)


def free_port() -> int:
    from tests.servers import free_port as port

    return port()


CGROUP = Path("/sys/fs/cgroup")


def cpu_cgroup(name: str, cores: float) -> Path:
    """A cgroup of its own limited to ``cores`` CPUs (v2's ``cpu.max``, else v1's CFS quota):
    its ``cgroup.procs``, which a process joins by writing its pid there."""
    period = 100_000
    quota = max(1000, round(cores * period))
    controllers = CGROUP / "cgroup.controllers"
    if controllers.exists() and "cpu" in controllers.read_text().split():
        (CGROUP / "cgroup.subtree_control").write_text("+cpu")
        group = CGROUP / name
        group.mkdir(exist_ok=True)
        (group / "cpu.max").write_text(f"{quota} {period}")
    elif (CGROUP / "cpu" / "cpu.cfs_quota_us").exists():
        group = CGROUP / "cpu" / name
        group.mkdir(exist_ok=True)
        (group / "cpu.cfs_period_us").write_text(str(period))
        (group / "cpu.cfs_quota_us").write_text(str(quota))
    else:
        raise RuntimeError("no writable cgroup cpu controller (v2 cpu.max or v1 cpu.cfs_quota_us)")
    return group / "cgroup.procs"


def throttled_counts(procs: Path) -> tuple[int, int] | None:
    """The cgroup's CFS periods so far and those in which it was throttled (its quota used up)."""
    try:
        lines = (procs.parent / "cpu.stat").read_text().splitlines()
        stat = dict(line.split()[:2] for line in lines if line.strip())
        return int(stat["nr_periods"]), int(stat["nr_throttled"])
    except (OSError, KeyError, ValueError):
        return None


def throttled_share(now: tuple[int, int] | None, then: tuple[int, int] | None) -> float | None:
    """The share of the periods between two counts in which the cgroup was throttled."""
    if now is None or then is None:
        return None
    return (now[1] - then[1]) / max(1, now[0] - then[0])


def join_cgroup(procs: Path) -> None:
    """Move this process into the cgroup of ``procs`` (in a child, before it runs the app)."""
    procs.write_text(str(os.getpid()))


def remove_cgroup(procs: Path) -> None:
    for _ in range(50):  # its processes may take a moment to be reaped
        try:
            procs.parent.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)


def start_instances(
    code: Path, n: int, work: Path, env: dict[str, str], groups: list[Path] | None = None
) -> list[tuple[subprocess.Popen[bytes], str]]:
    started = []
    for i in range(n):
        port = free_port()
        folder = work / f"instance-{i}"
        folder.mkdir(parents=True)
        log = folder / "serve.log"
        args = [sys.executable, "-m", "app", "--data-dir", str(folder / "data"), "serve"]
        args += ["--multi-user", "--host", "127.0.0.1", "--port", str(port)]
        args += ["--no-worker", "--no-demo"]
        # the process joins its cgroup before it runs the app: its children too
        join = functools.partial(join_cgroup, groups[i]) if groups else None
        proc = subprocess.Popen(
            args,
            cwd=code,
            env=env,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
            preexec_fn=join,
        )
        started.append((proc, f"http://127.0.0.1:{port}"))
    for (proc, _), i in zip(started, range(n), strict=True):
        wait_warm(work / f"instance-{i}" / "serve.log", proc)
    return started


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


async def label_loop(
    urls: list[str],
    annotators: dict[str, str],
    tokens: dict[str, str],
    projects: dict[str, list[tuple[str, str]]],
    warmup: float,
    seconds: float,
) -> dict[str, Any]:
    """Every annotator labels in a loop, each request to the next instance in turn."""
    latencies: list[float] = []
    codes: Counter[int | str] = Counter()
    began = time.monotonic()
    counting_from, stop_at = began + warmup, began + warmup + seconds

    async def annotator(k: int, user: str) -> None:
        project = annotators[user]
        rows = projects[project]
        intents = sorted({label for _, label in rows})
        rng = random.Random(k)
        headers = {"Authorization": f"Bearer {tokens[user]}"}
        clients = [httpx.AsyncClient(base_url=u, timeout=60, headers=headers) for u in urls]
        turn = k
        try:
            while (now := time.monotonic()) < stop_at:
                text, _ = rng.choice(rows)
                client = clients[turn % len(clients)]
                turn += 1
                started = time.perf_counter()
                try:
                    r = await client.post(
                        f"/api/v1/projects/{project}/label",
                        json={"text": text, "intents": [rng.choice(intents)], "split": "train"},
                    )
                    code: int | str = r.status_code
                except httpx.HTTPError as exc:
                    code = type(exc).__name__
                took = (time.perf_counter() - started) * 1000
                if now >= counting_from and time.monotonic() <= stop_at:
                    codes[code] += 1
                    if code == 200:
                        latencies.append(took)
        finally:
            for c in clients:
                await c.aclose()

    await asyncio.gather(*(annotator(k, user) for k, user in enumerate(annotators)))
    lat = np.asarray(latencies) if latencies else np.asarray([np.nan])
    errors = {str(k): v for k, v in codes.items() if k != 200}
    return {
        "labels": len(latencies),
        "labels_per_s": round(len(latencies) / seconds, 1),
        "p50_ms": round(float(np.percentile(lat, 50)), 1),
        "p95_ms": round(float(np.percentile(lat, 95)), 1),
        "p99_ms": round(float(np.percentile(lat, 99)), 1),
        "errors": errors,
    }


def run_one(
    code: Path, n: int, servers: dict[str, Any], args: argparse.Namespace, work: Path
) -> dict[str, Any]:
    pg, s3 = servers["postgres"], servers["s3"]
    name = f"bench_{os.getpid()}_{int(time.time() * 1000) % 10**9}"
    pg.execute(f"CREATE DATABASE {name}")  # empty: the code under test migrates it
    import redis

    redis.Redis.from_url(servers["redis"]).flushdb()
    urls = {
        "db": pg.url(name),
        "queue": servers["redis"],
        "artifacts": f"s3://{s3.new_bucket()}/studio",
    }
    env = server_env(code, urls, s3.env())
    projects = project_rows(args.projects, args.texts)
    names = sorted(projects)
    annotators = {f"annotator{k}": names[k % len(names)] for k in range(args.annotators)}
    spec = work / "spec.json"
    spec.write_text(
        json.dumps({"projects": projects, "annotators": annotators, "password": PASSWORD})
    )
    made = subprocess.run(
        [sys.executable, "-c", SETUP, str(work / "setup"), str(spec)],
        cwd=code,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if made.returncode:
        raise RuntimeError(f"setup failed:\n{made.stderr[-3000:]}")
    tokens = json.loads(made.stdout.strip().splitlines()[-1])
    groups = [
        cpu_cgroup(f"bench-instance-{os.getpid()}-{i}", args.cpu_quota)
        for i in range(n if args.cpu_quota else 0)
    ]
    try:
        started = start_instances(code, n, work, env, groups)
    except BaseException:
        for g in groups:
            remove_cgroup(g)
        raise
    try:
        marks = [throttled_counts(g) for g in groups]
        load_before = os.getloadavg()[0]
        result = asyncio.run(
            label_loop(
                [url for _, url in started],
                annotators,
                tokens,
                projects,
                args.warmup,
                args.seconds,
            )
        )
        load_after = os.getloadavg()[0]
        shares = [
            throttled_share(throttled_counts(g), m) for g, m in zip(groups, marks, strict=True)
        ]
    finally:
        stop([proc for proc, _ in started])
        for g in groups:
            remove_cgroup(g)
    return {
        "code": str(code),
        "instances": n,
        **result,
        "cpu_quota": args.cpu_quota,
        "throttled": [round(x, 2) for x in shares if x is not None],
        "load": f"{load_before:.1f}->{load_after:.1f}",
    }


def print_table(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    print(
        f"\n{args.annotators} annotators labelling through REST on {args.projects} projects of "
        f"{args.texts} utterances, {args.seconds:.0f} s each (after {args.warmup:.0f} s)\n"
    )
    if args.cpu_quota:
        print(f"Each instance limited to {args.cpu_quota:g} core (a cgroup's CPU quota)\n")
    print(
        "| code | instances | labels/s | p50 ms | p95 ms | p99 ms | errors | vs one | throttled "
        "| load |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    one = {r["code"]: r["labels_per_s"] for r in rows if r["instances"] == 1}
    for r in rows:
        base = one.get(r["code"])
        ratio = f"{r['labels_per_s'] / base:.2f}x" if base else "-"
        errors = ", ".join(f"{k}: {v}" for k, v in r["errors"].items()) or "0"
        shares = " / ".join(f"{x:.0%}" for x in r.get("throttled") or []) or "-"
        print(
            f"| {r['code']} | {r['instances']} | {r['labels_per_s']} | {r['p50_ms']} | "
            f"{r['p95_ms']} | {r['p99_ms']} | {errors} | {ratio} | {shares} | {r['load']} |"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--code", action="append", type=Path, help="a code tree (repeatable)")
    parser.add_argument("--instances", default="1,2", help="instance counts, comma-separated")
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument("--projects", type=int, default=5)
    parser.add_argument("--texts", type=int, default=300, help="utterances per project")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument(
        "--cpu-quota", type=float, default=0.0, help="cores each instance may use (a cgroup)"
    )
    parser.add_argument("--work", type=Path, help="keep the servers' folders here")
    args = parser.parse_args()
    codes = [c.resolve() for c in (args.code or [ROOT])]
    counts = [int(n) for n in args.instances.split(",")]
    from tests.servers import start_postgres, start_redis, start_s3

    work = args.work or Path(tempfile.mkdtemp(prefix="bench-instances-"))
    rows: list[dict[str, Any]] = []
    with ExitStack() as running:
        servers = {
            "postgres": running.enter_context(contextmanager(start_postgres)()),
            "redis": running.enter_context(contextmanager(start_redis)()),
            "s3": running.enter_context(contextmanager(start_s3)()),
        }
        if args.work is None:
            running.callback(shutil.rmtree, work, ignore_errors=True)
        for code in codes:
            for n in counts:
                folder = work / f"{code.name or 'code'}-{n}-{len(rows)}"
                folder.mkdir(parents=True)
                rows.append(run_one(code, n, servers, args, folder))
                print(json.dumps(rows[-1]), flush=True)
    print_table(rows, args)
    print(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "rows": rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
