"""A log dump seen whole, through a real server (issue 72 items 1-3): the projects of
``bench/dump_data.py`` (4k ... 250k rows: 770 labelled BANKING77 questions, its 3,080 test
questions, the rest unlabelled logs) imported by the CLI into a running ``intent-studio serve``
(``--no-worker``: no retrain competes; the frozen base encoder's int8 copy serves, built first on
the 4k project's rows), each size after the one before. For each size:

* ``import_s``: the CLI's import (its parts one after another) while the bench asks the server
  for the projects list and a prediction every half second: ``answer_ms_max`` and ``errors`` say
  whether the app answered meanwhile;
* ``first_card_s``: from the import's end to the Label tab's first card, asked through REST's
  queue (``GET /api/v1/projects/{p}/queue?limit=1``, the tab's next items);
* ``encode_rows_s``: the background's rows a second from the first card to the last row, as the
  server's own progress says it (``GET /api/v1/projects``: ``encoding``), beside the encoder's
  raw int8 rate on this machine, measured just before and after by a process of its own
  (``raw_rows_s``: 2,000 texts, the same encoder, nothing else);
* ``rss_mb``: the server's resident memory then.

A size whose rows are not all encoded within ``--encode-limit`` seconds (a 250k dump on a
loaded 2-core machine: hours) is given random unit vectors for the rest (``synthetic_vectors``
says how many), written to the embedding cache with the server stopped and adopted by the
server's background at its start, so what follows is measured at the full size: the server's
memory with every row (``rss_all_mb``); a stop (SIGTERM: its row indexes written) and a start
with its worker (automatic retrains off): ``ready_s`` (process start to ``/api/v1/ready``),
whether any shard of the embedding cache was written (``re_encoded``: nothing should be) and
the server's and the worker's memory a minute later. Last, ``--keys`` keys in a process of the
bench's own on the same data (the server stopped): each the Label tab's answer (the first
suggestion taken) and the next card (``answer_then`` then ``next_item``), p50/p95/max per
size.

Every process runs at ``nice 10`` and the load average is noted beside each number: the machine
is shared. Prints a table and writes JSON (``--out``).

Usage:
    python -m bench.dump_data --sizes 4000,250000 --out bench/results/dump
    nice -n 10 python -m bench.every_row --dump bench/results/dump --sizes 4000,250000 \\
        --out bench/results/every_row.json
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
CLI = str(Path(PY).parent / "intent-studio")
NICE = ["nice", "-n", "10"]

BASE_INT8 = """
import sys
from app.access import open_project
from app.access.auth import LOCAL
from app.config import load_settings
from app.services.training.base_int8 import ensure_base_int8
from app.serving.state import ServingState
state = ServingState.open(load_settings(sys.argv[1]))
print(ensure_base_int8(state.live, open_project(state.db, sys.argv[2], LOCAL)) is not None)
"""

RAW = """
import csv, json, sys, time
from app.config import load_settings
from app.serving.int8 import base_int8_rel, INT8_DIR, load_int8
from app.serving.state import ServingState
state = ServingState.open(load_settings(sys.argv[1]))
encoder = load_int8(state.artifacts.path(base_int8_rel("minilm")) / INT8_DIR)
texts = [r[0] for r in csv.reader(open(sys.argv[2], encoding="utf-8"))][1:][-2000:]
encoder.encode(texts[:64])
t = time.monotonic()
encoder.encode(texts)
print(json.dumps({"raw_rows_s": len(texts) / (time.monotonic() - t)}))
"""

SYNTHETIC = """
import sys
import numpy as np
from app.access import open_project
from app.access.auth import LOCAL
from app.config import load_settings
from app.serving.row_encoding import spaces_of
from app.serving.state import ServingState
from core.encoding.cache import write_shard
state = ServingState.open(load_settings(sys.argv[1]))
p = open_project(state.db, sys.argv[2], LOCAL)
pool = state.live.pool(p.id)
rows = spaces_of(state.live).rows(p.id, full=True)
fp, dim = pool.encoder.fingerprint, pool.encoder.dim
keys = [rows.key_of(i, pool.use_context) for i in rows.split]
found = state.live.cache.lookup_keys(fp, keys, dim)
missing = sorted({k for k, v in zip(keys, found) if v is None})
rng = np.random.default_rng(0)
for start in range(0, len(missing), 20000):
    part = missing[start:start + 20000]
    v = rng.normal(size=(len(part), dim)).astype(np.float32)
    write_shard(state.live.cache.folder(fp), part, v / np.linalg.norm(v, axis=1, keepdims=True))
print(len(missing))
"""

KEYS = """
import json, sys, time
from app.access import open_project
from app.access.auth import LOCAL
from app.config import load_settings
from app.services.queue import queue as q
from app.services.queue.queue_answers import answer_then
from app.serving.state import ServingState
state = ServingState.open(load_settings(sys.argv[1]))
p = open_project(state.db, sys.argv[2], LOCAL)
q.warm_up(state.live)  # what serve's warm-up does (its background starts: nothing left to do)
item, upcoming = q.next_item(state.live, p, [], "useful")
times = []
for _ in range(int(sys.argv[3])):
    if item is None:
        break
    t = time.monotonic()
    labels = [item.suggestions[0].intent] if item.suggestions else ["out_of_scope"]
    _, ahead = answer_then(state.live, p, item.id, "take", labels, expected_version=item.version,
                           how="useful", upcoming=upcoming)
    item, upcoming = q.next_item(state.live, p, upcoming, "useful", ahead=ahead)
    times.append(1000 * (time.monotonic() - t))
print(json.dumps({"keys": times}))
"""


def load() -> float:
    return round(os.getloadavg()[0], 1)


def cli(data: Path, *args: str, timeout: float = 3600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*NICE, CLI, "--data-dir", str(data), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )


def py(code: str, *args: str, timeout: float = 3600) -> str:
    done = subprocess.run(
        [*NICE, PY, "-c", code, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    if done.returncode:
        raise RuntimeError(done.stderr[-3000:])
    return done.stdout.strip().splitlines()[-1]


class Server:
    """``intent-studio serve --no-worker --no-demo`` on a data directory, at nice 10."""

    def __init__(self, data: Path, port: int, log: Path, *, worker: bool = False) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.log = log.open("a")
        started = time.monotonic()
        flags = [] if worker else ["--no-worker"]
        self.proc = subprocess.Popen(
            [*NICE, CLI, "--data-dir", str(data), "serve", *flags, "--no-demo", "--port", str(port)],
            cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT,
            env={**os.environ, "INTENT_STUDIO_AUTO_RETRAIN": "off"},
        )  # fmt: skip
        self.ready_s = self.wait_ready(started)

    def wait_ready(self, started: float, timeout: float = 900) -> float:
        while time.monotonic() - started < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError("the server exited")
            try:
                if httpx.get(f"{self.url}/api/v1/ready", timeout=2).status_code == 200:
                    return time.monotonic() - started
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise TimeoutError("server not ready")

    def rss_mb(self) -> float:
        """The server's resident memory and its children's (the map's projector)."""
        total = 0
        for pid in [self.proc.pid, *map(int, _children(self.proc.pid))]:
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
            except OSError:
                pass
        return round(total / 1024, 0)

    def project(self, name: str) -> dict[str, Any]:
        found = httpx.get(f"{self.url}/api/v1/projects", timeout=60).json()["projects"]
        return next(p for p in found if p["name"] == name)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(120)


def _children(pid: int) -> list[str]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return out + [c for child in out for c in _children(int(child))]


def shards(data: Path) -> set[str]:
    return {str(p.relative_to(data)) for p in (data / "cache").rglob("shard-*.npz")}


def ping(
    server: Server, seed: str, stop: threading.Event, out: list[float], errors: list[str]
) -> None:
    """Ask the server for its projects and a prediction, alternately, every half second."""
    n = 0
    while not stop.is_set():
        t = time.monotonic()
        try:
            if n % 2:
                r = httpx.post(f"{server.url}/api/v1/projects/{seed}/predict",
                               json={"text": "where is my card"}, timeout=60)  # fmt: skip
            else:
                r = httpx.get(f"{server.url}/api/v1/projects", timeout=60)
            if r.status_code != 200:
                errors.append(str(r.status_code))
        except httpx.HTTPError as exc:
            errors.append(type(exc).__name__)
        out.append(1000 * (time.monotonic() - t))
        n += 1
        stop.wait(0.5)


def one_size(
    server: Server, data: Path, parts: list[Path], name: str, seed: str, limit: float
) -> dict[str, Any]:
    """Import ``parts`` into project ``name`` and follow its encoding for at most ``limit``
    seconds (see the module)."""
    row: dict[str, Any] = {"project": name, "load_before": load()}
    stop = threading.Event()
    answers: list[float] = []
    errors: list[str] = []
    pinger = threading.Thread(target=ping, args=(server, seed, stop, answers, errors), daemon=True)
    pinger.start()
    t = time.monotonic()
    for part in parts:
        cli(data, "import", str(part), "--project", name)
    row["import_s"] = round(time.monotonic() - t, 1)
    t_import = time.monotonic()
    first = httpx.get(
        f"{server.url}/api/v1/projects/{name}/queue", params={"limit": 1}, timeout=600
    )
    row["first_card_s"] = round(time.monotonic() - t_import, 2)
    row["first_card_ok"] = first.status_code == 200 and bool(first.json().get("items"))
    stop.set()
    pinger.join()
    row |= {"answer_ms_max": round(max(answers, default=0), 0), "errors": len(errors)}
    row["answer_ms_p95"] = round(float(np.percentile(answers, 95)), 0) if answers else None
    t0, seen0, last = time.monotonic(), None, None
    while True:  # the background's progress, as the server says it
        enc = server.project(name).get("encoding") or {}
        if seen0 is None and enc:
            seen0, t0 = enc["encoded"], time.monotonic()
        last = enc or last
        if enc.get("done") or (seen0 is not None and time.monotonic() - t0 > limit):
            break
        time.sleep(5)
    wall = time.monotonic() - t0
    row["encoded_in_time"] = (last or {}).get("encoded")
    done_rows = (last or {}).get("encoded", 0) - (seen0 or 0)
    row["encode_rows_s"] = round(done_rows / wall, 1) if wall > 1 and done_rows > 0 else None
    row["encode_wall_s"] = round(wall, 0)
    row["rows"] = (last or {}).get("rows")
    row["rss_mb"] = server.rss_mb()
    row["load_after"] = load()
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--dump", type=Path, default=ROOT / "bench" / "results" / "dump")
    ap.add_argument("--sizes", default="4000,250000")
    ap.add_argument("--keys", type=int, default=300)
    ap.add_argument("--encode-limit", type=float, default=1800.0, help="seconds per size")
    ap.add_argument("--data-dir", type=Path, help="default: a fresh temporary folder")
    ap.add_argument("--reuse", action="store_true", help="the data dir holds the smallest size")
    ap.add_argument("--port", type=int, default=7931)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    data = args.data_dir or Path(tempfile.mkdtemp(prefix="every-row-"))
    log = data.parent / f"{data.name}.server.log"
    parts = {n: sorted(args.dump.glob(f"dump-{n}-*.csv")) for n in sizes}
    missing = [n for n, found in parts.items() if not found]
    if missing:
        raise SystemExit(f"no dump files of sizes {missing}: run python -m bench.dump_data first")
    seed = f"dump-{sizes[0]}"
    result: dict[str, Any] = {"sizes": {}, "cpu": _cpu(), "encode_limit_s": args.encode_limit}
    if not args.reuse:
        for part in parts[sizes[0]]:  # the smallest first, by the CLI: its test rows check int8
            cli(data, "import", str(part), "--project", seed)
        result["base_int8"] = py(BASE_INT8, str(data), seed)
    raw_text = parts[sizes[-1]][0]
    result["raw_before"] = json.loads(py(RAW, str(data), str(raw_text)))["raw_rows_s"]
    result["raw_load_before"] = load()
    server = Server(data, args.port, log)
    result["first_ready_s"] = round(server.ready_s, 1)
    names = {n: f"dump-{n}" if n != sizes[0] else f"{seed}-again" for n in sizes}
    try:
        for n in [*sizes[1:], sizes[0]]:
            files = parts[n] if n != sizes[0] else parts[n][:1]
            result["sizes"][n] = one_size(server, data, files, names[n], seed, args.encode_limit)
            print(json.dumps(result["sizes"][n]), flush=True)
        left = [
            n
            for n in sizes
            if result["sizes"][n].get("encoded_in_time") != result["sizes"][n]["rows"]
        ]
        if left:  # the rest of their rows given synthetic vectors (said so), adopted by the server
            server.stop()
            for n in left:
                result["sizes"][n]["synthetic_vectors"] = int(py(SYNTHETIC, str(data), names[n]))
            server = Server(data, args.port, log)
            for n in left:
                while not (server.project(names[n]).get("encoding") or {}).get("done"):
                    time.sleep(5)
        result["rss_all_mb"] = server.rss_mb()
        before = shards(data)
        server.stop()
        again = Server(data, args.port, log, worker=True)
        result["restart"] = {
            "ready_s": round(again.ready_s, 1),
            "re_encoded": len(shards(data) - before),
            "load": load(),
        }
        time.sleep(60)  # the worker warmed up beside it
        result["restart"]["rss_server_and_worker_mb"] = again.rss_mb()
        result["restart"]["re_encoded_after_60s"] = len(shards(data) - before)
        again.stop()
    finally:
        if server.proc.poll() is None:
            server.stop()
    result["raw_after"] = json.loads(py(RAW, str(data), str(raw_text)))["raw_rows_s"]
    result["raw_load_after"] = load()
    for n in sizes:
        times = json.loads(py(KEYS, str(data), names[n], str(args.keys)))["keys"]
        result["sizes"][n]["keys"] = {
            "n": len(times),
            "p50_ms": round(float(np.percentile(times, 50)), 0) if times else None,
            "p95_ms": round(float(np.percentile(times, 95)), 0) if times else None,
            "max_ms": round(max(times), 0) if times else None,
            "load": load(),
        }
        print(json.dumps({n: result["sizes"][n]["keys"]}), flush=True)
    _table(result)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2))
    return 0


def _cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return f"{line.split(':', 1)[1].strip()} x{os.cpu_count()}"
    return f"x{os.cpu_count()}"


def _table(result: dict[str, Any]) -> None:
    raw = (result["raw_before"] + result["raw_after"]) / 2
    print(
        f"CPU {result['cpu']}; raw int8 {result['raw_before']:.0f} -> {result['raw_after']:.0f} rows/s"
    )
    print(
        "size     import_s first_card_s answer_ms_max errors encode_rows_s (% raw) rss_mb keys_p95_ms load"
    )
    for n, r in result["sizes"].items():
        pct = f"{100 * r['encode_rows_s'] / raw:.0f}%" if r.get("encode_rows_s") else "-"
        keys = r.get("keys", {})
        print(
            f"{n:<8} {r['import_s']:>8} {r['first_card_s']:>12} {r['answer_ms_max']:>13} "
            f"{r['errors']:>6} {r.get('encode_rows_s') or '-':>13} ({pct}) {r['rss_mb']:>6} "
            f"{keys.get('p95_ms', '-'):>11} {r['load_before']}-{r['load_after']}"
        )
    if "restart" in result:
        r = result["restart"]
        print(
            f"restart: ready in {r['ready_s']} s, shards written {r['re_encoded']}, rss {r['rss_mb']} MB"
        )
    print(json.dumps(result))


if __name__ == "__main__":
    sys.exit(main())
