"""Load benchmark: concurrent clients calling the predict API of a local server.

Starts ``intent-studio serve`` on a free loopback port with a fresh data directory (demo project),
then runs ``--clients`` concurrent clients for ``--seconds`` each phase, each calling the Gradio
HTTP API (POST ``/gradio_api/call/predict`` then GET the result stream) in a loop:

1. ``idle``: the server alone;
2. ``training``: the same while a retrain of the demo project runs in the worker.

Prints a table (requests/s, p50/p95/p99 latency in ms, errors) and the same as JSON.
Targets (issue 7): 0 errors, p95 ≤ 100 ms on 2 cores.

Usage:
    python bench/load.py --clients 50 --seconds 60
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PROJECT = "Demo: Acme support"
QUERIES = [
    "where is my parcel",
    "I forgot my password",
    "can I return these shoes",
    "my card payment failed",
    "I need to talk to a person",
    "is this jacket in stock in medium",
    "cancel my order please",
    "do you have a discount code",
    "change my delivery address",
    "when will I get my refund",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def call(client: httpx.AsyncClient, text: str) -> None:
    r = await client.post("/gradio_api/call/predict", json={"data": [PROJECT, text, 1]})
    r.raise_for_status()
    event = r.json()["event_id"]
    r = await client.get(f"/gradio_api/call/predict/{event}")
    r.raise_for_status()
    if "event: complete" not in r.text:
        raise RuntimeError(r.text[-300:])


async def phase(url: str, clients: int, seconds: float) -> dict[str, float]:
    latencies: list[float] = []
    errors = 0
    stop = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def worker(seed: int) -> None:
        nonlocal errors
        rng = random.Random(seed)
        async with httpx.AsyncClient(base_url=url, timeout=30, limits=limits) as client:
            while time.monotonic() < stop:
                started = time.perf_counter()
                try:
                    await call(client, rng.choice(QUERIES))
                    latencies.append((time.perf_counter() - started) * 1000)
                except Exception:
                    errors += 1

    began = time.monotonic()
    await asyncio.gather(*(worker(i) for i in range(clients)))
    wall = time.monotonic() - began
    lat = np.asarray(latencies) if latencies else np.asarray([np.nan])
    return {
        "requests": len(latencies),
        "rps": round(len(latencies) / wall, 1),
        "p50_ms": round(float(np.percentile(lat, 50)), 1),
        "p95_ms": round(float(np.percentile(lat, 95)), 1),
        "p99_ms": round(float(np.percentile(lat, 99)), 1),
        "errors": errors,
    }


def wait_ready(url: str, proc: subprocess.Popen[bytes], timeout: float = 180) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError("the server exited")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise TimeoutError("server not ready")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument(
        "--settle",
        type=float,
        default=120,
        help="seconds to wait after start-up (the server compiles UMAP in the background)",
    )
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "load.json"))
    args = parser.parse_args()

    data = Path(tempfile.mkdtemp(prefix="intent-studio-load-"))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "INTENT_STUDIO_DATA_DIR": str(data)}
    server = subprocess.Popen(
        [sys.executable, "-m", "app", "serve", "--port", str(port)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    results: dict[str, dict[str, float]] = {}
    try:
        wait_ready(url, server)
        asyncio.run(phase(url, 2, 5))  # warm the encoder and the pool
        time.sleep(args.settle)
        results["idle"] = asyncio.run(phase(url, args.clients, args.seconds))
        trainer = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "app",
                "--data-dir",
                str(data),
                "train",
                "--project",
                PROJECT,
                "--queue",
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        time.sleep(5)  # let the worker pick the job up and start training
        results["training"] = asyncio.run(phase(url, args.clients, args.seconds))
        results["training"]["job_running_at_end"] = float(trainer.poll() is None)
        trainer.terminate()
        log, _ = trainer.communicate(timeout=30)
        print("training job during the second phase:", log.strip().splitlines()[-1:] or "?")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        shutil.rmtree(data, ignore_errors=True)

    print(f"{args.clients} clients, {args.seconds:.0f} s per phase, 2 CPU cores")
    print(f"{'phase':10} {'req/s':>7} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'errors':>7}")
    for name, r in results.items():
        print(
            f"{name:10} {r['rps']:>7} {r['p50_ms']:>8} {r['p95_ms']:>8} {r['p99_ms']:>8}"
            f" {r['errors']:>7}"
        )
    out = {"clients": args.clients, "seconds": args.seconds, "phases": results}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
