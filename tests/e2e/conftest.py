"""A real server in a subprocess on a free loopback port, and Debian's Chromium through Playwright
(never a downloaded browser). Screenshots go to test-artifacts/screenshots/."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "test-artifacts" / "screenshots"
CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, data_dir: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log = data_dir.parent / f"server-{self.port}.log"
        env = {**os.environ, **(env or {}), "INTENT_STUDIO_DATA_DIR": str(data_dir)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "app", "serve", "--port", str(self.port), *extra],
            env=env,
            stdout=self.log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 120) -> None:
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(self.url, timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        raise TimeoutError(f"server not ready: {self.log.read_text()[-3000:]}")

    def wait_warm(self, timeout: float = 600) -> None:
        """Wait until the server has loaded its encoders and built its pools (it prints a line),
        as an annotator's server has long done before the first key is pressed."""
        end = time.time() + timeout
        while "Warm:" not in self.log.read_text(errors="replace"):
            if time.time() > end or self.proc.poll() is not None:
                raise TimeoutError(f"server not warm: {self.log.read_text()[-3000:]}")
            time.sleep(0.5)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("e2e") / "data")
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {CHROMIUM} (make test installs Debian's chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1200})
    pg = ctx.new_page()
    pg.set_default_timeout(60_000)
    yield pg
    ctx.close()


def shot(page, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def emit_on_map(page, event: str, ids: list[int]) -> None:
    """Fire plotly's click or selection event on the map, as a pointer would, once the app's
    watcher has bound its handlers to the plot now drawn. The watcher checks every 300 ms and
    Plotly may replace the element on a redraw, so an event emitted on a plot not yet bound is
    heard by nobody: the check and the emit run in one turn of the page's event loop."""
    page.wait_for_function(
        "([event, ids]) => { const p = document.querySelector('#map-plot .js-plotly-plot');"
        " if (!p?.__studioBound) return false;"
        " p.emit(event, {points: ids.map((id) => ({customdata: id}))}); return true; }",
        arg=[event, ids],
    )


def banking77_csv(shared_data: Path, out: Path, *, unlabelled: int = 150, test: int = 500) -> Path:
    """The BANKING77 project the issues are tried on: the 10-shot seed-0 training set (770, 77
    intents), ``test`` test questions and ``unlabelled`` other training questions without their
    intent, all from ``../shared/data`` (every run builds the same rows)."""
    import csv
    import random

    folder = shared_data / "banking77"

    def read(name: str) -> list[dict[str, str]]:
        with (folder / name).open(encoding="utf-8", newline="") as f:
            return list(csv.DictReader(f))

    train = read("train_10shot_seed0.csv")
    taken = {r["text"] for r in train}
    rng = random.Random(0)
    pool = [r for r in read("train.csv") if r["text"] not in taken]
    tests = read("test.csv")
    rows = [(r["text"], r["label"], "train") for r in train]
    rows += [(r["text"], r["label"], "test") for r in rng.sample(tests, test)]
    rows += [(r["text"], "", "unlabelled") for r in rng.sample(pool, unlabelled)]
    seen: set[str] = set()
    with out.open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label", "split"])
        for row in rows:
            if row[0] not in seen:
                seen.add(row[0])
                w.writerow(row)
    return out


@pytest.fixture(scope="session")
def banking77_server(tmp_path_factory):
    """A server whose only project, ``banking77``, is :func:`banking77_csv` imported (one for the
    session: its warm-up is the slow part; the workbench tests run first and change labels)."""
    from tests.conftest import SHARED_DATA

    if not SHARED_DATA.exists():
        pytest.skip("../shared/data is not beside the checkout")
    root = tmp_path_factory.mktemp("b77")
    data = root / "data"
    src = banking77_csv(SHARED_DATA, root / "banking77.csv")
    env = {**os.environ, "INTENT_STUDIO_DATA_DIR": str(data)}
    subprocess.run(
        [sys.executable, "-m", "app", "import", str(src), "--project", "banking77"],
        env=env,
        check=True,
        capture_output=True,
    )
    srv = Server(data, "--no-demo")
    try:
        srv.wait_ready()
        srv.wait_warm()
        yield srv
    finally:
        srv.stop()


PASSWORDS = {"admin": "admin-password", "dana": "designer-password", "vic": "viewer-password"}


@pytest.fixture(scope="session")
def team_server(tmp_path_factory):
    """A ``serve --multi-user`` server (one for the session) with a designer, dana, and a viewer,
    vic, besides the admin, started with settings that would open a share tunnel or code edits."""
    data = tmp_path_factory.mktemp("team") / "data"
    for name, role in (("dana", "designer"), ("vic", "viewer")):
        add = ["users", "add", name, "--role", role]
        subprocess.run(
            [sys.executable, "-m", "app", "--data-dir", str(data), *add],
            env={**os.environ, "INTENT_STUDIO_PASSWORD": PASSWORDS[name]},
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
    hostile = {"GRADIO_SHARE": "True", "GRADIO_VIBE_MODE": "1"}  # would open a tunnel / code edits
    srv = Server(
        data, "--multi-user", env={"INTENT_STUDIO_ADMIN_PASSWORD": PASSWORDS["admin"], **hostile}
    )
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.stop()
