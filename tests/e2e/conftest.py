"""A real server in a subprocess on a free loopback port, and Debian's Chromium through Playwright
(never a downloaded browser). Screenshots go to test-artifacts/screenshots/.

A server costs seconds of CPU to start and warm up, so the modules that can share one live in a
folder whose conftest starts it once: ``demo/`` (the demo project), ``banking77/`` and
``banking77_views/`` (BANKING77: the labelling walks, and the views, design aids and refusals;
two folders, two servers, so that the two halves run on both workers) and ``team/`` (``serve
--multi-user``). Under pytest-xdist a folder runs whole on one worker
(:func:`tests.conftest.scheduling_unit`) and its server is a ``package`` fixture, stopped after
the folder's last test: a server left running idles at ~10 % of a core (its queue loop, its row
encoder's polls and its worker) while the other worker's tests would use that core."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.worker.supervisor import HAND_BACK_NOW

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "test-artifacts" / "screenshots"
# Debian's headless shell of Chromium (package chromium-headless-shell: the same Blink and V8 as
# its chromium, without the browser's own interface), as Playwright runs headless Chromium by
# default. The full browser in --headless mode starts the interface's pages too (the address
# bar's popup, a WebUI page in a renderer of its own for each window): ~0.7 s of CPU more per
# page a test opens, ~11 % of a BANKING77 folder's CPU. Debian's chromium when the shell is not
# there.
CHROMIUM = (
    os.environ.get("CHROMIUM_PATH")
    or shutil.which("chromium-headless-shell")
    or shutil.which("chromium")
    or "/usr/bin/chromium-headless-shell"
)
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


# What the UI's front door logs for a bug in a callback (app/ui/guard.py, ``unexpected``): a
# test during which a server logged it fails, whatever the page showed.
UNEXPECTED = "Unexpected error in UI callback"
_SERVERS: list[Server] = []


class Server:
    def __init__(self, data_dir: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        _SERVERS.append(self)
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

    def wait_ready(self, timeout: float = 600) -> None:
        """Wait for the page. A first start on a loaded 2-core machine builds the pages for
        minutes (11 minutes under the benchmarks in issue 65; it says so every 30 s): the
        limit is for a server that never answers, not a slow one."""
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

    def log_size(self) -> int:
        return self.log.stat().st_size if self.log.exists() else 0

    def bugs_since(self, offset: int) -> list[str]:
        """The bugs the server logged (with their tracebacks) after byte ``offset`` of its log."""
        if not self.log.exists():
            return []
        return [chunk[:3000] for chunk in self.said_since(offset).split(UNEXPECTED)[1:]]

    def stop(self) -> None:
        if self in _SERVERS:
            _SERVERS.remove(self)
        if self.proc.poll() is None:
            offset = self.log_size()
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(1)
            except subprocess.TimeoutExpired:
                # an event stream still open (a gradio_client's heartbeat) holds the graceful stop
                # for its 5 s; a second Ctrl+C ends that wait, as it would for a person
                self._interrupt()
            # a job under way has the grace (30 s) to end; the server says so, and a person in a
            # hurry presses Ctrl+C again: the job goes back to the queue at its next check
            end, asked = time.monotonic() + 10, False
            while self.proc.poll() is None and time.monotonic() < end:
                if not asked and HAND_BACK_NOW in self.said_since(offset):
                    self._interrupt()
                    asked = True
                time.sleep(0.2)
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)

    def _interrupt(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGINT)

    def said_since(self, offset: int) -> str:
        """What the server wrote to its log after byte ``offset``."""
        with self.log.open("rb") as f:
            f.seek(offset)
            return f.read().decode("utf-8", errors="replace")

    @contextlib.contextmanager
    def workers_held(self) -> Iterator[None]:
        """The server's training workers stopped (SIGSTOP) until the block ends, then going on:
        a job one runs stays in its phase for as long as a page needs to show it, however fast
        this machine trains (a demo retrain takes 3 s on some, less than the Label tab's poll).
        Held for seconds, not the reaper's minute."""
        import psutil

        workers = [
            child
            for child in psutil.Process(self.proc.pid).children(recursive=True)
            if "worker" in child.cmdline()
        ]
        assert workers, "the server runs no worker process"
        for w in workers:
            w.suspend()
        try:
            yield
        finally:
            for w in workers:
                with contextlib.suppress(psutil.NoSuchProcess):
                    w.resume()

    def stacks(self, wait: float = 1.0) -> str:
        """Every thread's stack of the running server (``kill -USR1``: app/cli/server.py) and
        the end of its log: what it was doing when a test stopped waiting for it."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGUSR1)
            time.sleep(wait)
        return self.log.read_text(errors="replace")[-20_000:]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test that used a server: its threads' stacks and log join the report."""
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    funcargs = getattr(item, "funcargs", {})
    for name, value in funcargs.items():
        if isinstance(value, Server):
            report.sections.append((f"server {name}: stacks and log", value.stacks()))


# Gradio shows an exception of its own (a handler that raised, outputs that do not match) as an
# error toast; the app's refusals of bad input are warnings ("Not done"), so only errors count.
# The toast may vanish before a test looks: every one is told to the console as it appears.
TOAST_REPORTER = """(() => {
  const told = new WeakSet();
  const tell = (el) => {
    if (told.has(el)) return;
    told.add(el);
    console.error('[error toast] ' + (el.textContent || '').replace(/\\s+/g, ' ').trim());
  };
  const scan = (node) => {
    if (node.nodeType !== 1) return;
    if (node.matches('.toast-body.error')) tell(node);
    node.querySelectorAll('.toast-body.error').forEach(tell);
  };
  new MutationObserver((records) => {
    for (const r of records) r.addedNodes.forEach(scan);
  }).observe(document, {childList: true, subtree: true});
})();"""


class BrowserProblems:
    """What a user would see go wrong in any page of the browser: error toasts, uncaught page
    errors and console errors. The autouse fixture :func:`_no_browser_problems` fails the test
    during which one was seen."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def watch_page(self, page) -> None:
        url = lambda: page.url  # noqa: E731 - the page's address when the problem happens
        page.on("pageerror", lambda err: self.seen.append(f"page error at {url()}: {err}"))

        def console(msg) -> None:
            if msg.type == "error":
                self.seen.append(f"console error at {url()}: {msg.text}")

        page.on("console", console)

    def watch_context(self, context) -> None:
        context.add_init_script(TOAST_REPORTER)
        context.on("page", self.watch_page)

    def watch(self, browser) -> None:
        """Watch every page ``browser`` opens, through ``new_context`` or ``new_page``."""
        new_context, new_page = browser.new_context, browser.new_page

        def watched_context(*args, **kwargs):
            context = new_context(*args, **kwargs)
            self.watch_context(context)
            return context

        def watched_page(*args, **kwargs):
            page = new_page(*args, **kwargs)  # in a context of its own
            page.context.add_init_script(TOAST_REPORTER)
            self.watch_page(page)
            return page

        browser.new_context, browser.new_page = watched_context, watched_page

    def settle(self, browser) -> None:
        """Give a toast of the test's last action time to appear and every event to arrive."""
        pages = [p for c in browser.contexts for p in c.pages if not p.is_closed()]
        if pages:
            with contextlib.suppress(Exception):  # a page closing under us has nothing to say
                pages[0].wait_for_timeout(300)

    def take(self) -> list[str]:
        seen, self.seen = self.seen, []
        return seen


PROBLEMS = BrowserProblems()
_BROWSERS: list = []


def launched_browser():
    """Chromium, watched for problems (:data:`PROBLEMS`), until the generator is closed. A test
    module's ``browser`` fixture yields it; a folder of modules that share a server shares one
    too (its conftest.py: a ``package`` fixture), since each launch costs Playwright's driver,
    the browser, its GPU and utility processes (~0.7 s of CPU to start and stop, more with the
    first page).

    A live sync Playwright owns the thread's event loop (``asyncio.run`` refuses to start
    beside it), so the browser lives no longer than the tests that use it: a module, or a
    folder of ``tests/e2e`` that runs whole on one pytest worker (tests/conftest.py)."""
    if not Path(CHROMIUM).exists():
        pytest.skip(
            f"Chromium not found at {CHROMIUM} (make test installs Debian's chromium-headless-shell)"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        PROBLEMS.watch(b)
        _BROWSERS.append(b)
        try:
            yield b
        finally:
            _BROWSERS.remove(b)
            b.close()


@pytest.fixture(scope="module")
def browser():
    """This module's Chromium (:func:`launched_browser`)."""
    yield from launched_browser()


@pytest.fixture(autouse=True)
def _no_browser_problems():
    """Forget what an earlier test's pages did after it ended (it was that test's to report)."""
    PROBLEMS.take()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """A browser test fails when its pages showed an error toast, a page error or a console error:
    what a user sees go wrong is a failure even when every assertion held. A test that failed on
    its own (a wait that timed out) reports them beside its error: they are often the cause."""
    logs = {server: server.log_size() for server in _SERVERS}
    try:
        result = yield
    except BaseException:
        seen = PROBLEMS.take() + _server_bugs(logs)
        if seen:
            item.add_report_section("call", "browser problems", "\n".join(seen[:20]))
        raise
    for b in _BROWSERS:
        PROBLEMS.settle(b)
    seen = PROBLEMS.take() + _server_bugs(logs)
    if seen:
        pytest.fail("the browser saw problems:\n" + "\n".join(seen[:20]), pytrace=False)
    return result


def _server_bugs(logs: dict[Server, int]) -> list[str]:
    """A bug a UI callback raised on a server during the test (logged with its traceback): a
    failure even when nothing on the page showed it (issue 58: every Evaluate logged one)."""
    return [
        f"{UNEXPECTED} on the server: {bug}"
        for server, offset in logs.items()
        for bug in server.bugs_since(offset)
    ]


@pytest.fixture
def page(browser):
    serving_state = browser.new_context(viewport={"width": 1400, "height": 1200})
    pg = serving_state.new_page()
    pg.set_default_timeout(60_000)
    yield pg
    serving_state.close()


def open_tab(page, name: str, timeout: float = 60_000) -> None:
    """Open the tab called ``name`` and wait until Gradio says it is selected. A click that lands
    while the app is still mounting (just after ``page.goto``) can be lost, so the click is
    repeated until the tab button reports ``aria-selected``."""
    tab = page.get_by_role("tab", name=name, exact=True)
    deadline = time.monotonic() + timeout / 1000
    while True:
        tab.click()
        try:
            page.wait_for_function(
                """(name) => [...document.querySelectorAll('[role=tab]')].some(
                    (t) => t.textContent.trim() === name && t.getAttribute('aria-selected') === 'true')""",
                arg=name,
                timeout=2_000,
            )
            return
        except Exception:
            if time.monotonic() > deadline:
                raise


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
    rows += [(r["text"], r["label"], "test") for r in rng.sample(tests, min(test, len(tests)))]
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


def cli(data: Path, *args: str, password: str | None = None) -> None:
    """``intent-studio --data-dir data ARGS`` run in this process (``password``: what
    ``$INTENT_STUDIO_PASSWORD`` gives ``users add``): the same command line as the shell's,
    without a fresh interpreter importing the app for each call (2-7 s each on a loaded box;
    a team's set-up made six)."""
    from app.cli import main

    with pytest.MonkeyPatch.context() as env:
        if password is not None:
            env.setenv("INTENT_STUDIO_PASSWORD", password)
        code = main(["--data-dir", str(data), *args])
    assert code == 0, f"intent-studio {' '.join(args)} exited {code}"


def imported_banking77(root: Path, **sizes: int) -> Path:
    """A data directory under ``root`` holding the project ``banking77``: :func:`banking77_csv`
    (``sizes``: its ``unlabelled`` and ``test`` counts) imported with the CLI. Skips the test
    when ``../shared/data`` is not beside the checkout."""
    from tests.conftest import SHARED_DATA

    if not SHARED_DATA.exists():
        pytest.skip("../shared/data is not beside the checkout")
    data = root / "data"
    src = banking77_csv(SHARED_DATA, root / "banking77.csv", **sizes)
    cli = [sys.executable, "-m", "app", "--data-dir", str(data)]
    subprocess.run(
        [*cli, "import", str(src), "--project", "banking77"],
        check=True,
        capture_output=True,
        cwd=ROOT,
    )
    return data


PASSWORDS = {"admin": "admin-password", "dana": "designer-password", "vic": "viewer-password"}


def banking77_server_for_a_folder(tmp_path_factory):
    """What a BANKING77 folder's ``package`` fixture yields: a server whose only project,
    ``banking77``, is :func:`banking77_csv` imported, started and warm, stopped after the folder's
    last test. Its warm-up is the slow part, paid once per folder."""
    srv = Server(imported_banking77(tmp_path_factory.mktemp("b77")), "--no-demo")
    try:
        srv.wait_ready()
        srv.wait_warm()
        yield srv
    finally:
        srv.stop()
