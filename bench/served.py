"""What the issue 63 benches share (:mod:`bench.beside_retrain`, :mod:`bench.auto_label`): the
issue's BANKING77 data directory built once per checkout and copied per run, ``intent-studio
serve`` of a checkout with its own worker (its processes' CPU seconds from /proc, the keys'
hook of :mod:`bench.keylog` loaded in it, what it logged as bugs), Chromium on its Label tab
driven by the scripted annotator of ``tests/e2e/annotator.py``, and the CPU's name."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from bench import keylog, load

PROJECT = load.BANKING77
UNEXPECTED = "Unexpected error in UI callback"  # tests/e2e/conftest.py: a bug in a callback
# The deployment's switches a bench sets itself (never inherited from the shell).
ENVS = ("INTENT_STUDIO_AUTO_RETRAIN", "INTENT_STUDIO_WORKER_SHARE", "INTENT_STUDIO_DATA_DIR")


def pct(values: list[float], q: float) -> float | None:
    """The ``q`` quantile (nearest rank, as bench/workbench.py), None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


def summary(values: list[float]) -> dict[str, Any]:
    return {
        "n": len(values),
        "p50_ms": round(statistics.median(values), 1) if values else None,
        "p95_ms": pct(values, 0.95),
        "max_ms": round(max(values), 1) if values else None,
    }


def commit_of(code: Path) -> str:
    """The last commit that changed ``code``'s app (not its bench or docs)."""
    done = subprocess.run(
        ["git", "-C", str(code), "log", "-1", "--format=%h", "--", "app", "core", "storage"],
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() or code.name


def dirty(code: Path) -> bool:
    done = subprocess.run(
        ["git", "-C", str(code), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
    )
    return bool(done.stdout.strip())


def template(
    work: Path, code: Path, shared: Path, trained: bool, rebuild: bool, test: int = 1000
) -> Path:
    """The BANKING77 data directory of ``code``'s app (imported, and ``trained`` once with the
    CLI) with ``test`` test questions (3,080: the whole split), built once under ``work`` and
    reused; a run copies it (:func:`fresh`)."""
    from tests.e2e.conftest import banking77_csv

    kind = "trained" if trained else "imported"
    folder = (
        work / f"{commit_of(code)}-{kind}"
        if test == 1000
        else work / f"{commit_of(code)}-{kind}-{test}"
    )
    if (folder / "built.json").exists() and not rebuild:
        return folder / "data"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    load.CODE = code
    csv = banking77_csv(shared, folder / "b77.csv", unlabelled=2000, test=test)
    load.cli(folder / "data", "import", str(csv), "--project", PROJECT)
    began = time.perf_counter()
    if trained:
        load.cli(folder / "data", "train", "--project", PROJECT)
    built = {"code": str(code), "trained": trained, "train_s": round(time.perf_counter() - began)}
    (folder / "built.json").write_text(json.dumps(built))
    print(f"built {folder.name}: {built}", flush=True)
    return folder / "data"


def fresh(source: Path, run: Path, name: str) -> Path:
    """A copy of a template's data directory for one run (the artifacts' paths are relative)."""
    data = run / name / "data"
    shutil.rmtree(data.parent, ignore_errors=True)
    data.parent.mkdir(parents=True)
    shutil.copytree(source, data)
    return data


class Cpu:
    """CPU seconds of a process group (the server, its worker and their children) and of the
    whole machine, from /proc."""

    def __init__(self, pgid: int) -> None:
        self.pgid = pgid
        self.tick = os.sysconf("SC_CLK_TCK")

    def members(self) -> list[tuple[int, str, float]]:
        """The group's processes: (pid, ``server`` | ``worker`` | ``other``, CPU seconds)."""
        out = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError):
                raw = stat.read_text()
                fields = raw[raw.rindex(")") + 2 :].split()
                if int(fields[2]) != self.pgid:
                    continue
                seconds = (int(fields[11]) + int(fields[12])) / self.tick
                pid = int(stat.parent.name)
                cmd = (stat.parent / "cmdline").read_bytes().split(b"\0")
                kind = "server" if pid == self.pgid else "worker" if b"worker" in cmd else "other"
                out.append((pid, kind, seconds))
        return out

    def group(self) -> dict[str, float]:
        """Seconds by process: ``server`` (the group's leader), ``worker``, ``other``."""
        out = {"server": 0.0, "worker": 0.0, "other": 0.0}
        for _, kind, seconds in self.members():
            out[kind] += seconds
        return out

    def worker_memory(self) -> dict[int, dict[str, int]]:
        """The worker processes' peak (``VmHWM``) and present (``VmRSS``) resident memory,
        bytes, by pid (from /proc/<pid>/status; the peak is the process's since it started)."""
        out = {}
        for pid, kind, _ in self.members():
            if kind != "worker":
                continue
            with contextlib.suppress(OSError, ValueError, StopIteration):
                lines = Path(f"/proc/{pid}/status").read_text().splitlines()
                kb = {
                    k: int(v.split()[0])
                    for k, v in (x.split(":", 1) for x in lines)
                    if k in ("VmHWM", "VmRSS")
                }
                out[pid] = {"hwm": kb["VmHWM"] * 1024, "rss": kb["VmRSS"] * 1024}
        return out

    @staticmethod
    def machine() -> tuple[float, float]:
        """(busy, total) jiffies of all CPUs since boot."""
        parts = [float(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
        idle = parts[3] + parts[4]
        return sum(parts) - idle, sum(parts)


class WorkerMemory(threading.Thread):
    """The worker's resident memory every ``every`` s while it runs: its largest ``VmRSS``
    seen and its ``VmHWM`` (the peak since the process started), GB, over every worker pid seen
    (a worker that was restarted counts with its own peak)."""

    def __init__(self, cpu: Cpu, every: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.cpu, self.every = cpu, every
        self.start_hwm = {pid: m["hwm"] for pid, m in cpu.worker_memory().items()}
        self.seen: dict[int, dict[str, int]] = {}
        self.halt = threading.Event()

    def sample(self) -> None:
        for pid, m in self.cpu.worker_memory().items():
            was = self.seen.get(pid, {"hwm": 0, "rss": 0})
            self.seen[pid] = {"hwm": max(was["hwm"], m["hwm"]), "rss": max(was["rss"], m["rss"])}

    def run(self) -> None:
        while not self.halt.is_set():
            self.sample()
            self.halt.wait(self.every)

    def stop(self) -> dict[str, Any]:
        self.halt.set()
        self.join(10)
        return self.snapshot()

    def snapshot(self) -> dict[str, Any]:
        """What was seen so far (a sample taken now too)."""
        self.sample()
        gb = 1024**3
        return {
            "pids": sorted(self.seen),
            "hwm_before_gb": round(max(self.start_hwm.values(), default=0) / gb, 2),
            "hwm_gb": round(max((m["hwm"] for m in self.seen.values()), default=0) / gb, 2),
            "rss_max_gb": round(max((m["rss"] for m in self.seen.values()), default=0) / gb, 2),
        }


class App:
    """``intent-studio serve`` of ``code`` on ``data`` with its own worker, the keys' hook
    (:mod:`bench.keylog`) loaded in its processes."""

    def __init__(self, code: Path, data: Path, **env: str) -> None:
        self.code, self.data = code, data
        self.port = load.free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = data.parent / "server.log"
        self.keys = data.parent / "keys.jsonl"
        hook = keylog.sitecustomize(data.parent / "hook")
        base = {k: v for k, v in os.environ.items() if k not in ENVS}
        self.env = {
            **base,
            "PYTHONPATH": os.pathsep.join([str(hook), str(code)]),
            "INTENT_STUDIO_DATA_DIR": str(data),
            keylog.ENV: str(self.keys),
            **env,
        }
        self.started = time.time()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "app", "serve", "--port", str(self.port), "--no-demo"],
            cwd=code,
            env=self.env,
            stdout=self.log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.cpu = Cpu(self.proc.pid)

    def cli(self, *args: str) -> subprocess.Popen[str]:
        """``intent-studio ARGS`` of the same checkout on the same data (started, not waited)."""
        return subprocess.Popen(
            [sys.executable, "-m", "app", "--data-dir", str(self.data), *args],
            cwd=self.code,
            env={**self.env, "PYTHONPATH": str(self.code)},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def wait_warm(self, settle: float, timeout: float = 900) -> float:
        """Until the server is warm and then quiet (:meth:`quiet`), at least ``settle`` s after
        warm; the seconds from the start."""
        load.wait_ready(self.url, self.proc, timeout)
        load.wait_warm(self.log, self.proc, timeout)
        self.quiet(settle, timeout)
        return round(time.time() - self.started, 1)

    def quiet(self, settle: float = 0, timeout: float = 900, cores: float = 0.15) -> float:
        """Until the app's processes (the server, the worker's warm-up or job, the background
        fits) used under ``cores`` of a core for 10 s, ``settle`` s at least; the seconds."""
        began = time.monotonic()
        calm = 0
        last = sum(self.cpu.group().values())
        while time.monotonic() - began < timeout:
            time.sleep(2)
            now = sum(self.cpu.group().values())
            calm = calm + 1 if now - last < 2 * cores else 0
            last = now
            if calm >= 5 and time.monotonic() - began >= settle:
                break
        return round(time.monotonic() - began, 1)

    def problems(self) -> list[str]:
        """What the server and its worker logged that a user would call a bug."""
        seen = []
        for name in ("server.log", "data/worker.log"):
            path = self.data.parent / name
            text = path.read_text(errors="replace") if path.exists() else ""
            seen += [f"{name}: {chunk[:1500]}" for chunk in text.split(UNEXPECTED)[1:]]
            seen += [
                f"{name}: {text[max(0, i - 200) : i + 1500]}"
                for i in _all(text, "Traceback (most recent call last)")
            ]
        return seen[:10]

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        with contextlib.suppress(ProcessLookupError):  # a worker left behind
            os.killpg(self.proc.pid, signal.SIGKILL)


def _all(text: str, needle: str) -> list[int]:
    out, i = [], text.find(needle)
    while i >= 0:
        out.append(i)
        i = text.find(needle, i + 1)
    return out


def next_job(client: httpx.Client) -> int:
    """The id the next job will get (the first GET /jobs/{id} that answers 404)."""
    n = 1
    while client.get(f"/api/v1/jobs/{n}").status_code == 200:
        n += 1
    return n


class Browser:
    """Chromium on the app's Label tab, the scripted annotator pressing the keys of its round
    over and over from where it stopped; what the page showed go wrong is kept."""

    def __init__(self, url: str, delay: int) -> None:
        from playwright.sync_api import sync_playwright

        from tests.e2e import annotator
        from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, TOAST_REPORTER

        self.problems: list[str] = []
        self._pw = sync_playwright().start()
        self.browser = self._pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = self.browser.new_context(viewport={"width": 1440, "height": 900})
        context.add_init_script(TOAST_REPORTER)
        self.page = context.new_page()
        self.page.set_default_timeout(120_000)
        self.page.on("pageerror", lambda err: self.problems.append(f"page error: {err}"))
        self.page.on(
            "console",
            lambda m: self.problems.append(f"console: {m.text}") if m.type == "error" else None,
        )
        self.page.goto(url)
        self.page.wait_for_function(
            "() => { const c = document.querySelector('#queue-card [data-item]');"
            " return c && c.dataset.item !== 'none'; }",
            timeout=300_000,
        )
        shown = self.page.inner_text("#project-summary").split("·")[0].strip()
        if shown != PROJECT:
            from bench.workbench import _pick

            _pick(self.page, PROJECT)
        self.bot = annotator.Annotator(self.page, delay=delay)
        self._round = itertools.cycle(annotator.ROUND)
        self._queries = itertools.cycle(annotator.FILTERS)
        self._not_labels = (annotator.SKIP, annotator.DELETE, annotator.UNDO)
        self._undo = annotator.UNDO
        self._done: list[str] = []  # the keys that undo would take back, last first
        self.kept = 0  # labels given and not undone (what the project counts as changed)
        self.stamps: list[float] = []  # the wall clock of each answer on screen

    def press(self) -> None:
        """The round's next key, and its answer on screen."""
        key = next(self._round)
        self.bot.press(key, next(self._queries) if key == "f" else "")
        self.stamps.append(time.time())
        if key == self._undo:
            undone = self._done.pop() if self._done else self._undo
            self.kept -= undone not in self._not_labels
        else:
            self._done.append(key)
            self.kept += key not in self._not_labels

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.browser.close()
        with contextlib.suppress(Exception):
            self._pw.stop()


def cpu_name() -> dict[str, Any]:
    """The CPU's model name and its matrix/bf16 features (what training runs in)."""
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = next(
        (line.split(":", 1)[1].strip() for line in lscpu.splitlines() if "Model name" in line),
        "?",
    )
    flags = Path("/proc/cpuinfo").read_text().split()
    return {
        "model": model,
        "cores": os.cpu_count(),
        "avx512_bf16": "avx512_bf16" in flags,
        "amx": any(f.startswith("amx") for f in flags),
        "avx2": "avx2" in flags,
    }


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
