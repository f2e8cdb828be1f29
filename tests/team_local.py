"""``make team-local``: compose.yaml's topology without docker, tried end to end.

Debian's PostgreSQL and Redis and moto's S3 server start on free loopback ports
(:mod:`tests.servers`); then compose.yaml's own commands for the app and its workers, each in a
folder of its own, sharing nothing but the three URLs. A tiny project is imported with the CLI,
retrained through REST (``POST /api/v1/projects/{p}/train``, then ``GET /api/v1/jobs/{id}``),
and asked for one prediction; the containers' healthchecks run against the live processes; what
happened is printed (which worker took the job, the version); and everything is stopped, on
success, on an error, on Ctrl-C or SIGTERM. ``--keep`` leaves it running until Ctrl-C.

    .venv/bin/python -m tests.team_local [--keep] [--workers 2] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from app.config import ENV_ARTIFACTS_URL, ENV_DB_URL, ENV_QUEUE_URL
from tests.samples import QUICK, TINY
from tests.servers import Postgres, free_port, start_postgres, start_redis, start_s3

ROOT = Path(__file__).resolve().parents[1]
PROJECT = "tiny"
STARTUP_TIMEOUT = 300.0  # the app's first start on a busy 2-core machine: imports, migrations
JOB_TIMEOUT = 300.0


def compose_service(name: str) -> dict[str, Any]:
    services: dict[str, dict[str, Any]] = yaml.safe_load(
        (ROOT / "compose.yaml").read_text(encoding="utf-8")
    )["services"]
    return services[name]


def words(value: str | list[str]) -> list[str]:
    return shlex.split(value) if isinstance(value, str) else [str(v) for v in value]


def localise(command: list[str], data_dir: Path, port: int | None = None) -> list[str]:
    """A compose command for this machine: this Python's ``intent-studio``, a data directory of
    its own, loopback and a free port instead of the container's.

    >>> localise(["intent-studio", "--data-dir", "/data", "serve", "--host", "0.0.0.0",
    ...           "--port", "7860"], Path("/tmp/a"), 8123)[3:]
    ['--data-dir', '/tmp/a', 'serve', '--host', '127.0.0.1', '--port', '8123']
    """
    assert command[0] == "intent-studio", command
    out = [sys.executable, "-m", "app", *command[1:]]
    for flag, value in (("--data-dir", str(data_dir)), ("--host", "127.0.0.1"), ("--port", port)):
        if flag in out and value is not None:
            out[out.index(flag) + 1] = str(value)
    return out


def call(method: str, url: str, token: str | None = None, body: Any = None) -> tuple[int, Any]:
    """One REST call: (status, JSON answer)."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


class Team:
    """The processes of one run, in a temporary folder; :meth:`close` stops them all."""

    def __init__(self, env: dict[str, str]) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="intent-studio-team-"))
        self.env = env
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, command: list[str]) -> subprocess.Popen[bytes]:
        folder = self.root / name
        folder.mkdir(exist_ok=True)
        log = (self.root / f"{name}.log").open("ab")
        proc = subprocess.Popen(
            command, cwd=folder, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        self.procs[name] = proc
        return proc

    def cli(self, *args: str) -> str:
        """``intent-studio ARGS`` as an admin on the server would run it: its output."""
        command = [sys.executable, "-m", "app", "--data-dir", str(self.root / "cli"), *args]
        run = subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=300)
        if run.returncode != 0:
            raise RuntimeError(f"intent-studio {' '.join(args)}: {run.stderr.strip()}")
        return run.stdout

    def check_alive(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}:\n{self.log(name)}")

    def log(self, name: str, lines: int = 30) -> str:
        path = self.root / f"{name}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def close(self) -> None:
        """SIGTERM to each process group (the app and workers stop gracefully), SIGKILL past 20 s."""
        for proc in self.procs.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


def descendants(pid: int) -> list[int]:
    """The processes started below ``pid`` that are still its descendants (Linux /proc)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
    found, frontier = [], [pid]
    while frontier:
        children = [p for p, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def postmaster_pid(server: Postgres) -> int:
    return int((server.folder / "data" / "postmaster.pid").read_text().split()[0])


def wait_until_up(team: Team, base: str) -> float:
    """Seconds until the app's readiness route answers 200 (what its compose healthcheck asks:
    warm, and its servers answer)."""
    started = time.monotonic()
    while time.monotonic() - started < STARTUP_TIMEOUT:
        team.check_alive()
        with contextlib.suppress(OSError):
            if call("GET", f"{base}/api/v1/ready")[0] == 200:
                return time.monotonic() - started
        time.sleep(0.5)
    raise RuntimeError(f"the app did not answer within {STARTUP_TIMEOUT:.0f} s:\n{team.log('app')}")


def retrain(team: Team, base: str, token: str) -> dict[str, Any]:
    """Queue a retrain through REST and follow its job until it ends; its last state. A retrain
    that already runs (the imported labels start one by themselves: ``auto_retrain``) answers
    200 with that job, which is followed instead."""
    settings = {k: v for k, v in QUICK.items() if k != "method"}
    status, answer = call(
        "POST",
        f"{base}/api/v1/projects/{PROJECT}/train",
        token,
        {"method": QUICK["method"], "settings": settings},
    )
    if status not in (200, 202) or answer.get("created") is not (status == 202):
        raise RuntimeError(f"POST …/train answered {status}: {answer}")
    job: dict[str, Any] = answer["job"]
    print(f"  job #{job['id']} {job['status']} ({job['trigger']})", flush=True)
    seen, deadline = (job["status"], job["phase"]), time.monotonic() + JOB_TIMEOUT
    while job["status"] in ("queued", "running"):
        if time.monotonic() > deadline:
            raise RuntimeError(f"job #{job['id']} still {job['status']} after {JOB_TIMEOUT:.0f} s")
        team.check_alive()
        time.sleep(0.5)
        job = call("GET", f"{base}/api/v1/jobs/{job['id']}", token)[1]
        if (job["status"], job["phase"]) != seen:
            seen = (job["status"], job["phase"])
            print(f"  job #{job['id']} {job['status']} {job['phase']} {job['message']}", flush=True)
    return job


def worker_of(db_url: str, job_id: int) -> int | None:
    """The pid of the worker that claimed the job (the jobs table records it)."""
    from storage.db import Database
    from storage.tables import TrainingJob

    db = Database(db_url, apply_migrations=False)
    try:
        with db.session() as s:
            row = s.get(TrainingJob, job_id)
            return row.worker_pid if row is not None else None
    finally:
        db.dispose()


def healthchecks(team: Team, port: int) -> dict[str, int]:
    """compose.yaml's healthchecks run here against the live processes: their exit statuses."""
    app_test = words(compose_service("app")["healthcheck"]["test"])
    serve = words(compose_service("app")["command"])
    code = app_test[3].replace(f":{serve[serve.index('--port') + 1]}/", f":{port}/")
    checks = {"app": subprocess.Popen([sys.executable, "-c", code], env=team.env)}
    worker_test = words(compose_service("worker")["healthcheck"]["test"])[1:]
    for name in team.procs:
        if name.startswith("worker"):
            command = localise(worker_test, team.root / name)
            checks[name] = subprocess.Popen(command, env=team.env, cwd=team.root / name)
    return {name: proc.wait(120) for name, proc in checks.items()}


def run(workers: int, keep: bool) -> dict[str, Any]:
    started = time.monotonic()
    summary: dict[str, Any] = {}
    with contextlib.ExitStack() as stack:
        print("Starting PostgreSQL, Redis and moto's S3 server on loopback…", flush=True)
        postgres = stack.enter_context(contextlib.contextmanager(start_postgres)())
        redis_url = stack.enter_context(contextlib.contextmanager(start_redis)())
        s3 = stack.enter_context(contextlib.contextmanager(start_s3)())
        db_url = postgres.new_database()
        base_env = {k: v for k, v in os.environ.items() if not k.startswith("INTENT_STUDIO_")}
        env = {
            **base_env,
            "PYTHONPATH": str(ROOT),
            "OMP_WAIT_POLICY": "PASSIVE",
            **s3.env(),
            ENV_DB_URL: db_url,
            ENV_QUEUE_URL: redis_url,
            ENV_ARTIFACTS_URL: f"s3://{s3.new_bucket()}/artifacts",
            "INTENT_STUDIO_ADMIN_PASSWORD": secrets.token_urlsafe(12),
        }
        if "INTENT_STUDIO_INT8" in os.environ:  # the tests turn the int8 copy off, for time
            env["INTENT_STUDIO_INT8"] = os.environ["INTENT_STUDIO_INT8"]
        team = Team(env)
        stack.callback(shutil.rmtree, team.root, ignore_errors=True)
        stack.callback(team.close)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        print(f"Starting the app on {base} and {workers} workers (compose.yaml's commands)…")
        serve, work = (words(compose_service(name)["command"]) for name in ("app", "worker"))
        team.start("app", localise(serve, team.root / "app", port))
        for name in (f"worker-{i}" for i in range(1, workers + 1)):
            team.start(name, localise(work, team.root / name))
        data = team.root / f"{PROJECT}.csv"
        with data.open("w", newline="", encoding="utf-8") as f:
            out = csv.writer(f)
            out.writerow(["text", "label", "split"])
            for intent, texts in TINY.items():  # as tests.samples.make_tiny splits them
                out.writerows(
                    [t, intent, "test" if i == 4 else "train"] for i, t in enumerate(texts)
                )
        print(team.cli("import", str(data), "--project", PROJECT).strip())
        summary["app_up_s"] = round(wait_until_up(team, base), 1)
        print(f"App up after {summary['app_up_s']} s.", flush=True)
        token = team.cli("users", "token", "admin").strip().splitlines()[-1]
        print(f"Retraining {PROJECT!r} through REST…", flush=True)
        job = retrain(team, base, token)
        summary["job"] = job
        if job["status"] != "succeeded":
            raise RuntimeError(f"job #{job['id']} {job['status']}: {job['message']}")
        pid = worker_of(db_url, job["id"])
        by_pid = {proc.pid: name for name, proc in team.procs.items()}
        summary["worker"] = by_pid.get(pid or -1, f"pid {pid}")
        versions = call("GET", f"{base}/api/v1/projects/{PROJECT}/versions", token)[1]["versions"]
        summary["version"] = versions[0]
        status, predicted = call(
            "POST", f"{base}/api/v1/projects/{PROJECT}/predict", token, {"text": "refund me"}
        )
        summary["prediction"] = predicted if status == 200 else {"status": status, **predicted}
        summary["healthchecks"] = healthchecks(team, port)
        summary["root"] = str(team.root)
        started_here = [p.pid for p in team.procs.values()] + descendants(os.getpid())
        summary["pids"] = sorted({*started_here, postmaster_pid(postgres)})
        _report(summary)
        if keep:
            _wait_for_ctrl_c(base, env, token)
    summary["seconds"] = round(time.monotonic() - started, 1)
    print(f"Stopped everything after {summary['seconds']} s.", flush=True)
    return summary


def _report(summary: dict[str, Any]) -> None:
    job, version = summary["job"], summary["version"]
    print(f"Job #{job['id']} {job['status']}: {job['message']}")
    print(f"  taken by {summary['worker']}; version {version.get('version')} is active")
    top = (summary["prediction"].get("predictions") or [{}])[0]
    print(f"  'refund me' -> {top.get('labels', top)}")
    print(f"  healthchecks (exit status): {summary['healthchecks']}", flush=True)


def _wait_for_ctrl_c(base: str, env: dict[str, str], token: str) -> None:
    print(f"\nRunning: {base} (admin / {env['INTENT_STUDIO_ADMIN_PASSWORD']}); API token {token}")
    for name in (ENV_DB_URL, ENV_QUEUE_URL, ENV_ARTIFACTS_URL, "AWS_ENDPOINT_URL"):
        print(f"  {name}={env[name]}")
    # Ctrl-C is taken as the stop from the moment the line saying so is out (a Ctrl-C read from
    # it at once, as the test sends it, used to land before this block and exit with 130).
    with contextlib.suppress(KeyboardInterrupt):
        print("Ctrl-C stops everything.", flush=True)
        while True:
            time.sleep(3600)


@contextlib.contextmanager
def _sigterm_as_ctrl_c() -> Iterator[None]:
    """Ctrl-C and SIGTERM stop everything, whatever this process inherited: a shell starts a
    background job (``make test &``, ``nohup``) with SIGINT ignored, and Python then leaves it
    ignored, so the test's Ctrl-C was only taken with its SIGTERM, 240 s later."""
    previous = {
        sig: signal.signal(sig, signal.default_int_handler)
        for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make team-local", description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2, help="training workers (default 2)")
    parser.add_argument("--keep", action="store_true", help="keep it running until Ctrl-C")
    parser.add_argument("--json", help="also write the summary to this file")
    args = parser.parse_args(argv)
    import pytest

    try:
        with _sigterm_as_ctrl_c():
            summary = run(args.workers, args.keep)
    except pytest.skip.Exception as missing:  # tests.servers: a server program is not installed
        print(f"team-local: {missing.msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("Stopped.", file=sys.stderr)
        return 130
    except RuntimeError as error:
        print(f"team-local failed: {error}", file=sys.stderr)
        return 1
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2, default=str), encoding="utf-8")
    return 0 if all(code == 0 for code in summary["healthchecks"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
