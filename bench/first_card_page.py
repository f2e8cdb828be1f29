"""The Label tab's first card after the page (issue 65 item 2), in Chromium, on a server started
the way a designer starts it (``serve``, its worker child beside it unless ``--no-worker``).

Cases, each ``--runs`` times on a fresh copy:

* ``fresh``: the project just imported by the CLI (``--csv``, as ``bench.first_predict`` builds
  BANKING77: 3,769 rows), nothing encoded yet; the page is opened as soon as the server answers
  (its warm-up still running: the card waits for it);
* ``restart`` (with ``--data``): a copy of a data directory the app has run on (a retrained
  project, its vectors cached), the page opened as soon as the server answers;
* then, in each run, ``warm``: a new page once the server printed "Warm:".

``first_card_s``: from ``page.goto`` to the card shown (its item id set, "Loading" gone); the
page's errors and console errors are listed (none expected). A table, then the JSON.

``--code`` (repeatable) runs other checkouts with this one's Python, taking turns run by run.

Usage:
    python -m bench.first_card_page --csv /tmp/b77.csv --runs 3 --code /tmp/peer --code .
    python -m bench.first_card_page --data /tmp/walk/data --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench._checkouts import write_report
from bench.first_predict import cpu_name, free_port, revision

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CARD = (
    "() => document.querySelector('#queue-card [data-item]')?.dataset.item"
    " && !(document.querySelector('#queue-card')?.innerText || '').includes('Loading')"
)


def _card(browser: Any, url: str) -> tuple[float, list[str]]:
    errors: list[str] = []
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.set_default_timeout(600_000)
    began = time.perf_counter()
    page.goto(url)
    page.get_by_role("tab", name="Label").first.click()
    page.wait_for_function(CARD, polling=50)
    took = time.perf_counter() - began
    context.close()
    return round(took, 2), errors


def _prepare(args: argparse.Namespace, code: Path, data: Path) -> None:
    shutil.rmtree(data, ignore_errors=True)
    if args.data:
        shutil.copytree(args.data, data)
        return
    cmd = [sys.executable, "-m", "app", "--data-dir", str(data), "import", str(args.csv)]
    subprocess.run([*cmd, "--project", args.project], cwd=code, check=True, capture_output=True)


def run_once(
    browser: Any, args: argparse.Namespace, code: Path, work: Path, n: int
) -> list[dict[str, Any]]:
    data = work / "data"
    _prepare(args, code, data)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "app", "--data-dir", str(data), "serve", "--no-demo"]
    cmd += ["--host", "127.0.0.1", "--port", str(port)] + (
        ["--no-worker"] if args.no_worker else []
    )
    log = work / f"serve{n}.log"
    load = os.getloadavg()[0]
    began = time.perf_counter()
    server = subprocess.Popen(
        cmd, cwd=code, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True
    )
    case = "restart" if args.data else "fresh"
    try:
        while True:
            try:
                urllib.request.urlopen(url, timeout=2)
                break
            except OSError:
                if server.poll() is not None:
                    raise RuntimeError(log.read_text()[-3000:]) from None
                time.sleep(0.1)
        page_s = round(time.perf_counter() - began, 1)
        first, errors = _card(browser, url)
        rows = [
            dict(case=case, run=n, page_after_start_s=page_s, first_card_s=first, errors=errors)
        ]
        rows[-1]["code"] = revision(code)
        rows[-1]["load"] = f"{load:.1f}->{os.getloadavg()[0]:.1f}"
        while "Warm:" not in log.read_text():
            time.sleep(0.2)
        load = os.getloadavg()[0]
        again, errors = _card(browser, url)
        rows.append(
            dict(case="warm", run=n, first_card_s=again, errors=errors, code=revision(code))
        )
        rows[-1]["load"] = f"{load:.1f}->{os.getloadavg()[0]:.1f}"
        return rows
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(60)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--csv", type=Path, help="rows to import fresh, each run")
    source.add_argument("--data", type=Path, help="a data directory to copy, each run")
    parser.add_argument("--project", default="banking77")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-worker", action="store_true", help="serve without its worker")
    parser.add_argument(
        "--code", action="append", type=Path, help="a code tree (repeatable; turns run by run)"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/first_card_page.json")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="first-card-") as tmp, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM)
        for n in range(1, args.runs + 1):
            for code in [c.resolve() for c in (args.code or [ROOT])]:
                rows += run_once(browser, args, code, Path(tmp), n)
                print(json.dumps(rows[-2:]), file=sys.stderr, flush=True)
        browser.close()
    worker = "without its worker" if args.no_worker else "with its worker child"
    print(f"`serve` ({worker}); {cpu_name()} ({os.cpu_count()} cores)")
    print(
        "| code | case | run | page after start (s) | **first card after the page (s)** "
        "| errors | load |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        page_s = r.get("page_after_start_s", "")
        print(
            f"| {r['code']} | {r['case']} | {r['run']} | {page_s} | **{r['first_card_s']}** | "
            f"{len(r['errors'])} | {r['load']} |"
        )
    settings = {k: str(v) for k, v in vars(args).items()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_report(
        {"bench": "first_card_page", "cpu": cpu_name(), "args": settings, "rows": rows}, args.out
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
