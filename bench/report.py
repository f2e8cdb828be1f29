"""The stakeholder report of a BANKING77-sized project: its size and how long Chromium takes to
open it.

The project is the one the browser tests use (77 intents, the 10-shot training set, 500 test
questions, 150 unlabelled; ``tests.e2e.conftest.banking77_csv``), evaluated with the frozen
encoder (no training needed). The report is written by the CLI, once interactive and once with
``--static``; each is opened ``--repeats`` times in a fresh Chromium page (``/usr/bin/chromium``
through Playwright) and timed from navigation to the first frame after every chart is drawn.

    python -m bench.report [--data ../shared/data] [--keep DIR]

Prints a table and a JSON line (also written to bench/results/report.json).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# Resolves once every plotly chart on the page has drawn its SVG, then waits for the next frame.
DRAWN = """() => new Promise(done => {
  const ready = () => [...document.querySelectorAll('.plotly-graph-div')]
      .every(d => d.querySelector('.main-svg'));
  const check = () => ready() ? requestAnimationFrame(() => done(true)) : setTimeout(check, 10);
  check();
})"""


def cli(data_dir: Path, *args: str) -> None:
    cmd = [sys.executable, "-m", "app", "--data-dir", str(data_dir), *args]
    subprocess.run(cmd, check=True, cwd=ROOT, capture_output=True)


def open_times(path: Path, repeats: int) -> list[float]:
    from playwright.sync_api import sync_playwright

    from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS

    times = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for _ in range(repeats):
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            t = time.perf_counter()
            page.goto(path.as_uri(), wait_until="load")
            page.evaluate(DRAWN)
            times.append(time.perf_counter() - t)
            page.close()
        browser.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--keep", type=Path, help="a folder to keep the data dir and reports in")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-static", action="store_true", help="skip the --static report")
    parser.add_argument(
        "--open", type=Path, nargs="+", help="only time opening these files, taking turns"
    )
    args = parser.parse_args()
    if args.open:
        turns: dict[Path, list[float]] = {f: [] for f in args.open}
        for _ in range(args.repeats):
            for f in args.open:
                turns[f] += open_times(f.resolve(), 1)
        for f, ts in turns.items():
            size = f.stat().st_size / 1e6
            print(
                f"{f.name:<40} {size:6.2f} MB  open median {statistics.median(ts):.2f} s  "
                f"min {min(ts):.2f} s  max {max(ts):.2f} s"
            )
        return
    from tests.e2e.conftest import banking77_csv

    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-report-"))
    root.mkdir(parents=True, exist_ok=True)
    data_dir = root / "data"
    if not (data_dir / "studio.db").exists():
        csv_path = banking77_csv(args.data, root / "banking77.csv")
        cli(data_dir, "import", str(csv_path), "--project", "banking77")
    rows: list[dict[str, Any]] = []
    for kind in ["interactive"] + ([] if args.no_static else ["static"]):
        out = root / f"report-{kind}.html"
        t = time.perf_counter()
        flags = ["--static"] if kind == "static" else []
        cli(data_dir, "report", "--project", "banking77", "-o", str(out), *flags)
        build_s = time.perf_counter() - t
        times = open_times(out, args.repeats)
        rows.append(
            {
                "report": kind,
                "size_mb": round(out.stat().st_size / 1e6, 2),
                "build_s": round(build_s, 1),
                "open_s_median": round(statistics.median(times), 2),
                "open_s_max": round(max(times), 2),
                "path": str(out),
            }
        )
    print(
        f"{'report':<12} {'size MB':>8} {'build s':>8} {'open s (median)':>16} {'open s max':>11}"
    )
    for r in rows:
        print(
            f"{r['report']:<12} {r['size_mb']:>8} {r['build_s']:>8} {r['open_s_median']:>16} "
            f"{r['open_s_max']:>11}"
        )
    line = json.dumps({"bench": "report", "rows": rows})
    print(line)
    results = ROOT / "bench" / "results"
    results.mkdir(exist_ok=True)
    (results / "report.json").write_text(line + "\n")


if __name__ == "__main__":
    main()
