"""The first REST prediction after the app restarts (issue 64 item 8): goal <= 1 s.

Per code tree (``--code``, repeatable; default this checkout), a data directory with the
BANKING77 project of the issues (770 labelled, 1,000 test, 2,000 unlabelled, as
``bench.load --banking77`` builds it) imported and retrained once by that code's CLI (``train``:
its default recipe, int8 on), kept in ``--work`` (built once, reused when there). Each restart is
a fresh copy of it and ``intent-studio serve`` of the code (its worker child too, as a designer
starts it; ``--no-worker`` leaves it out); ``GET /api/v1/ready`` is polled every ``--poll``
seconds until 200 (``ready``: seconds from the process's start; ``--same-data``: every restart
after the first on the copy the one before used, as a server restarted in place), then at once one
``POST /api/v1/projects/banking77/predict`` (``first``: its latency, what the first caller
waits for), then ``--after`` more, one after another (``next p50`` / ``max``). The checkouts
take turns restart by restart (A B A B ...), so both see the same load; the table gives each
restart, the JSON too.

Usage:
    python -m bench.first_predict --code /work/peer-64-8 --code . --restarts 3 --work /tmp/fp
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
if not SHARED.exists():
    SHARED = Path("/work/shared/data")
PROJECT = "banking77"
QUESTIONS = [
    "I still have not received my new card",
    "how do I top up with a cheque",
    "why was I charged a fee for a transfer",
    "my card payment was declined",
    "can I change my PIN at an ATM",
]


def environment(code: Path, data: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(code),
        "INTENT_STUDIO_DATA_DIR": str(data),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    for name in ("INTENT_STUDIO_DB_URL", "INTENT_STUDIO_QUEUE_URL", "INTENT_STUDIO_ARTIFACTS_URL"):
        env.pop(name, None)
    return env


def cli(code: Path, data: Path, *args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "app", "--data-dir", str(data), *args],
        cwd=code,
        env=environment(code, data),
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"intent-studio {' '.join(args[:2])} failed:\n{done.stderr[-3000:]}")


def build(code: Path, place: Path) -> Path:
    """The project imported and retrained once by ``code`` in ``place/pristine`` (reused)."""
    pristine = place / "pristine"
    if (place / "built").is_file():
        return pristine
    shutil.rmtree(place, ignore_errors=True)
    place.mkdir(parents=True)
    from tests.e2e.conftest import banking77_csv

    csv = banking77_csv(SHARED, place / "b77.csv", unlabelled=2000, test=1000)
    began = time.perf_counter()
    cli(code, pristine, "import", str(csv), "--project", PROJECT)
    cli(code, pristine, "train", "--project", PROJECT)
    print(f"{code}: built in {time.perf_counter() - began:.0f} s", file=sys.stderr, flush=True)
    (place / "built").write_text("")
    return pristine


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def restart(
    code: Path, pristine: Path, run: Path, args: argparse.Namespace, fresh: bool = True
) -> dict[str, Any]:
    if fresh or not (run / "data").exists():
        shutil.rmtree(run, ignore_errors=True)
        shutil.copytree(pristine, run / "data")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "app", "--data-dir", str(run / "data"), "serve", "--no-demo"]
    cmd += ["--host", "127.0.0.1", "--port", str(port)]
    if args.no_worker:
        cmd.append("--no-worker")
    load = os.getloadavg()[0]
    log = run / "serve.log"
    began = time.perf_counter()
    server = subprocess.Popen(
        cmd,
        cwd=code,
        env=environment(code, run / "data"),
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        with httpx.Client(base_url=url, timeout=120) as client:
            polls = 0
            while True:
                if server.poll() is not None:
                    raise RuntimeError(
                        f"serve exited {server.returncode}:\n{log.read_text()[-3000:]}"
                    )
                if time.perf_counter() - began > args.timeout:
                    raise TimeoutError(f"not ready within {args.timeout:.0f} s")
                try:
                    polls += 1
                    if client.get("/api/v1/ready", timeout=5).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(args.poll)
            ready = time.perf_counter() - began
            times = []
            for k in range(1 + args.after):
                t = time.perf_counter()
                r = client.post(
                    f"/api/v1/projects/{PROJECT}/predict",
                    json={"text": QUESTIONS[k % len(QUESTIONS)]},
                )
                times.append(time.perf_counter() - t)
                r.raise_for_status()
                if k == 0:
                    first_answer = r.json()["predictions"][0]
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)
    rest = times[1:] or [float("nan")]
    return {
        "ready_s": round(ready, 2),
        "polls": polls,
        "first_ms": round(times[0] * 1000, 1),
        "next_p50_ms": round(statistics.median(rest) * 1000, 1),
        "next_max_ms": round(max(rest) * 1000, 1),
        "answer": first_answer.get("labels", [])[:1],
        "load": f"{load:.1f}->{os.getloadavg()[0]:.1f}",
    }


def cpu_name() -> str:
    """The CPU's model name (/proc/cpuinfo)."""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "?"


def revision(code: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(code), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return done.stdout.strip() or code.name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--code", action="append", type=Path, help="a code tree (repeatable)")
    parser.add_argument("--restarts", type=int, default=3)
    parser.add_argument("--after", type=int, default=10, help="predictions after the first")
    parser.add_argument("--poll", type=float, default=0.1, help="seconds between ready polls")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--no-worker", action="store_true", help="serve without its worker")
    parser.add_argument("--build-only", action="store_true", help="build the data dirs, stop")
    parser.add_argument(
        "--same-data",
        action="store_true",
        help="restart the same copy each time (what the runs before wrote stays, as on a "
        "server restarted in place); the first restart takes a fresh copy",
    )
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument(
        "--out", type=Path, default=ROOT / "bench" / "results" / "first_predict.json"
    )
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="first-predict-"))
    codes = [c.resolve() for c in (args.code or [ROOT])]
    built = {code: build(code, work / f"{code.name}-built") for code in codes}
    if args.build_only:
        return 0
    rows: list[dict[str, Any]] = []
    for n in range(args.restarts):
        for code in codes:
            fresh = n == 0 or not args.same_data
            got = restart(code, built[code], work / f"{code.name}-run", args, fresh)
            got.update(code=revision(code), restart=n + 1)
            rows.append(got)
            print(json.dumps(got), file=sys.stderr, flush=True)
    worker = "without its worker" if args.no_worker else "with its worker child"
    cpu = cpu_name()
    print(
        f"`serve` ({worker}) restarted on a retrained BANKING77 (3,770 rows); goal: first <= 1 s;"
        f" {cpu} ({os.cpu_count()} cores)"
    )
    print(
        "| code | restart | ready after (s) | first predict (ms) | next p50 (ms) | next max (ms) | load |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['code']} | {r['restart']} | {r['ready_s']} | {r['first_ms']} | "
            f"{r['next_p50_ms']} | {r['next_max_ms']} | {r['load']} |"
        )
    settings = {k: str(v) for k, v in vars(args).items()}
    text = json.dumps({"bench": "first_predict", "cpu": cpu, "args": settings, "rows": rows})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
