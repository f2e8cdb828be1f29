"""Benchmark of the annotator's workbench: the labelling queue in a real browser and the Data
table at scale.

* **queue**: a server with the BANKING77 project (770 train, 500 test, 75 unlabelled per run,
  from ``../shared/data``) and a second small one, Chromium through Playwright. Per key delay
  (``--delays``, default 80 and 30 ms a key): the first card after picking the project in the
  header (from the other one), then the scripted annotator of ``tests/e2e/annotator.py``
  (``--labels`` labels mixing 1-3, Enter, filters with and without ``/``, n, t, o, s, d, u),
  every stored label checked against the intended one. Reports keys per label, wrong labels,
  key → the answer on screen (p50 / p95 / max ms; target ≤ 300 ms) and labels per minute.
* **table**: projects of 10k and 100k utterances (BANKING77's 770 labelled examples, the rest
  unlabelled variants of its texts, as chat logs are), the first page of the Data table through
  the service: cold (first call, the page's texts encoded) and warm (target ≤ 1 s), and a page
  filtered by text.

* **keys**: the server's side of a Label-tab key (Enter: take the first suggestion) as the app
  runs it, through the role guard, on a BANKING77 project of 3,768 rows (770 train, 500 test,
  2,500 unlabelled): ms per key (p50 / p95 / max over ``--keys`` keys after 3 warm-up keys) and
  the database sessions each key opened. ``--peer DIR`` runs the same on another checkout (a
  ``git worktree`` of the commit before) in its own process, for a before/after of one run.

Timings swing 2-4x on a shared 2-core machine: run it with nothing else running.

Usage:
    python -m bench.workbench --data ../shared/data --out bench/results/workbench.json
    python -m bench.workbench --skip-table   # the annotator only
    python -m bench.workbench --only-keys --peer /tmp/before   # the server's side of a key
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from app.access.actions import LABEL, READ

ROOT = Path(__file__).resolve().parents[1]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _pick(page: Any, project: str) -> float:
    """Pick ``project`` in the header's picker; seconds until its first card is on screen (a new
    ``data-seq``: every render has its own)."""
    before = page.locator("#queue-card [data-item]").get_attribute("data-seq")
    started = time.perf_counter()
    page.locator("#project input").click()
    page.get_by_role("option", name=project, exact=True).first.click()
    page.wait_for_function(
        "(s) => { const c = document.querySelector('#queue-card [data-item]');"
        " return c && c.dataset.item !== 'none' && c.dataset.seq !== s; }",
        arg=before,
        timeout=300_000,
    )
    return time.perf_counter() - started


def bench_queue(data: Path, labels: int, delays: list[int]) -> dict[str, Any]:
    """The scripted annotator (tests/e2e/annotator.py) on a fresh BANKING77 server: ``labels``
    labels at each key delay, every stored label checked against the intended one."""
    import os
    import subprocess

    from playwright.sync_api import sync_playwright

    from tests.e2e import annotator
    from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, Server, banking77_csv

    root = Path(tempfile.mkdtemp(prefix="bench-queue-"))
    src = banking77_csv(data, root / "banking77.csv", unlabelled=75 * len(delays))
    small = root / "mini.csv"  # a second project, to pick banking77 after it
    lines = src.read_text(encoding="utf-8").splitlines(True)
    small.write_text("".join(lines[:31] + lines[-10:]))  # 30 train, 10 unlabelled (the end)
    env = {**os.environ, "INTENT_STUDIO_DATA_DIR": str(root / "data")}
    for path, name in ((src, "banking77"), (small, "mini")):
        subprocess.run(
            [sys.executable, "-m", "app", "import", str(path), "--project", name],
            env=env,
            check=True,
            capture_output=True,
        )
    srv = Server(root / "data", "--no-demo")
    runs = []
    try:
        srv.wait_ready()
        srv.wait_warm()  # an annotator's server has long finished its warm-up
        api = annotator.client(srv)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for delay in delays:
                page = browser.new_page(viewport={"width": 1440, "height": 900})
                page.set_default_timeout(120_000)
                page.goto(srv.url)
                page.wait_for_selector("#queue-card [data-item]")
                time.sleep(2)  # let the page settle (the summary loads too)
                shown = page.inner_text("#project-summary").split("·")[0].strip()
                if shown != "mini":  # picking the project already shown changes nothing
                    _pick(page, "mini")
                first_card = _pick(page, "banking77")
                bot = annotator.Annotator(page, delay=delay)
                started = time.perf_counter()
                annotator.run(bot, labels)
                total = time.perf_counter() - started
                bad = annotator.wrong(bot.intended, annotator.stored(api))
                waits = bot.waits_ms
                runs.append(
                    {
                        "key_delay_ms": delay,
                        "labels": bot.labels,
                        "keys": bot.keys,
                        "keys_per_label": round(bot.keys / bot.labels, 2),
                        "wrong": len(bad),
                        "first_card_after_pick_s": round(first_card, 2),
                        "key_to_next_p50_ms": round(statistics.median(waits), 1),
                        "key_to_next_p95_ms": round(_pct(waits, 0.95), 1),
                        "key_to_next_max_ms": round(max(waits), 1),
                        "labels_per_min": round(60 * bot.labels / total),
                        "wrong_examples": list(bad.items())[:5],
                    }
                )
                page.close()
            browser.close()
    finally:
        srv.stop()
    return {"runs": runs}


def _table_project(ctx: Any, data: Path, name: str, n: int) -> None:
    from app.services.projects.io import destination, import_utterances
    from storage.utterances import NewUtterance

    def read(file: str) -> list[dict[str, str]]:
        with (data / "banking77" / file).open(encoding="utf-8", newline="") as f:
            return list(csv.DictReader(f))

    train = read("train_10shot_seed0.csv")
    taken = {r["text"] for r in train}
    rows = [NewUtterance(r["text"], (r["label"],), "train") for r in train]
    texts = list(dict.fromkeys(r["text"] for r in read("train.csv") if r["text"] not in taken))
    i = 0
    while len(rows) < n:
        base = texts[i % len(texts)]
        suffix = "" if i < len(texts) else f" (log {i // len(texts)})"
        rows.append(NewUtterance(base + suffix, (), "unlabelled"))
        i += 1
    import_utterances(ctx.db, destination(ctx.db, name), rows)


def bench_table(data: Path, sizes: list[int]) -> list[dict[str, Any]]:
    from app.access import open_project
    from app.config import load_settings
    from app.services.labelling.table import TableQuery, table_page

    try:  # the serving state (issue 59); a checkout before: AppContext(settings)
        from app.serving.state import ServingState

        open_state: Any = ServingState.open
    except ImportError:
        from app.serving.context import AppContext as open_state  # type: ignore[no-redef]
    from storage.projects import get_project

    out = []
    for n in sizes:
        ctx = open_state(load_settings(Path(tempfile.mkdtemp(prefix="bench-table-")) / "data"))
        t = time.perf_counter()
        _table_project(ctx, data, "big", n)
        imported = time.perf_counter() - t
        t = time.perf_counter()
        with ctx.db.session() as s:
            ctx.live.pool(get_project(s, "big").id)  # the app warms the pool up at start-up
        warm_up = time.perf_counter() - t
        timings = {}
        for label, query in (
            ("first_page_cold", TableQuery()),
            ("first_page_warm", TableQuery()),
            ("page_50_warm", TableQuery(page=50)),
            ("text_filter", TableQuery(search="card")),
        ):
            t = time.perf_counter()
            page = table_page(ctx.live, open_project(ctx.db, "big"), query)
            timings[label] = round((time.perf_counter() - t) * 1000, 1)
            assert page.rows
        out.append(
            {
                "rows": n,
                "import_s": round(imported, 1),
                "pool_warm_up_s": round(warm_up, 1),
                **{f"{k}_ms": v for k, v in timings.items()},
            }
        )
        ctx.close()
    return out


def _keys_project(ctx: Any, data: Path) -> None:
    """BANKING77 10-shot seed 0 (train), 500 test questions and 2,500 other training questions
    unlabelled: an annotator's project midway."""
    from app.services.projects import io
    from storage.utterances import NewUtterance

    def read(file: str) -> list[dict[str, str]]:
        with (data / "banking77" / file).open(encoding="utf-8", newline="") as f:
            return list(csv.DictReader(f))

    train, test = read("train_10shot_seed0.csv"), read("test.csv")[:500]
    seen = {r["text"] for r in train + test}
    unlabelled = [r for r in read("train.csv") if r["text"] not in seen][:2500]
    rows, taken = [], set()
    for split, part in (("train", train), ("test", test), ("unlabelled", unlabelled)):
        for r in part:
            if r["text"] not in taken:
                taken.add(r["text"])
                labels = (r["label"],) if split != "unlabelled" else ()
                rows.append(NewUtterance(r["text"], labels, split))
    # a peer from before the project handle (b599b03) imports into a project's name
    where = io.destination(ctx.db, "banking77") if hasattr(io, "destination") else "banking77"
    io.import_utterances(ctx.db, where, rows)


def bench_keys(data: Path, keys: int, code: Path = ROOT) -> dict[str, Any]:
    """The server's side of ``keys`` Enter keys in the Label tab (the guarded callback the app
    binds), with the database sessions each opened; ``code``: the checkout whose app runs."""
    import app
    from app.config import load_settings

    try:  # the serving state (issue 59); a checkout before: AppContext(settings)
        from app.serving.state import ServingState

        open_state: Any = ServingState.open
    except ImportError:
        from app.serving.context import AppContext as open_state  # type: ignore[no-redef]
    from app.ui import queue_actions, queue_tab
    from app.ui.common import bind
    from app.ui.guard import enforce, guarded

    if code.resolve() not in Path(app.__file__).resolve().parents:
        raise RuntimeError(f"this process imports {app.__file__}, not the app of {code}")
    ctx = open_state(load_settings(Path(tempfile.mkdtemp(prefix="bench-keys-")) / "data"))
    _keys_project(ctx, data)
    opened = [0]
    for kind in ("session", "write", "reading"):
        own = getattr(ctx.db, kind)

        def counted(*args: Any, _own: Any = own, **kwargs: Any) -> Any:
            opened[0] += 1
            return _own(*args, **kwargs)

        setattr(ctx.db, kind, counted)
    n_out = 11
    start = enforce(ctx, guarded(READ, outputs=n_out)(bind(queue_tab.start, ctx.live)))
    enter = enforce(ctx, guarded(LABEL, outputs=n_out)(bind(queue_actions.enter, ctx.live)))
    t = time.perf_counter()
    state = start("banking77", "useful", None)[1]
    first = time.perf_counter() - t
    times, sessions = [], []
    for i in range(keys + 3):
        opened[0] = 0
        t = time.perf_counter()
        state = enter("banking77", state)[1]
        if i >= 3:
            times.append((time.perf_counter() - t) * 1000)
            sessions.append(opened[0])
    ctx.close()
    return {
        "code": str(code),
        "keys": keys,
        "queue_start_s": round(first, 2),
        "key_p50_ms": round(statistics.median(times), 1),
        "key_p95_ms": round(_pct(times, 0.95), 1),
        "key_max_ms": round(max(times), 1),
        "sessions_per_key_median": statistics.median(sessions),
        "sessions_per_key_max": max(sessions),
    }


def _keys_table(runs: list[dict[str, Any]]) -> None:
    print("\nA Label-tab key, server side (BANKING77, 3,768 rows; guarded Enter)")
    head = ("code", "p50 ms", "p95 ms", "max ms", "sessions", "max sess")
    print(f"{head[0]:<28}" + "".join(f"{h:>10}" for h in head[1:]))
    for r in runs:
        cells = (
            r["key_p50_ms"],
            r["key_p95_ms"],
            r["key_max_ms"],
            r["sessions_per_key_median"],
            r["sessions_per_key_max"],
        )
        print(f"{Path(r['code']).name:<28}" + "".join(f"{c:>10}" for c in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--labels", type=int, default=50)
    parser.add_argument("--delays", default="80,30", help="ms between keys, one run each")
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--skip-queue", action="store_true")
    parser.add_argument("--skip-table", action="store_true")
    parser.add_argument("--keys", type=int, default=60, help="Enter keys of the keys bench")
    parser.add_argument("--peer", type=Path, help="another checkout to run the keys bench on")
    parser.add_argument("--only-keys", action="store_true")
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)  # a peer's run: its code
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result: dict[str, Any] = {}
    if args.only_keys and args.root:  # a peer's run: its JSON only
        print(json.dumps(bench_keys(args.data, args.keys, args.root)))
        return
    runs = []
    if args.peer:
        import os
        import subprocess

        # this script's file, the peer's app: the peer's folder first on the child's path
        peer = str(args.peer.resolve())
        path = os.pathsep.join(filter(None, [peer, os.environ.get("PYTHONPATH")]))
        cmd = [sys.executable, __file__, "--only-keys", "--root", peer]
        cmd += ["--data", str(args.data), "--keys", str(args.keys)]
        env = {**os.environ, "PYTHONPATH": path}
        done = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    runs.append(bench_keys(args.data, args.keys))
    result["keys"] = runs
    _keys_table(runs)
    if args.only_keys:
        print(json.dumps(result, indent=2))
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(result, indent=2))
        return
    if not args.skip_queue:
        delays = [int(d) for d in args.delays.split(",")]
        result["queue"] = bench_queue(args.data, args.labels, delays)
        print("\nScripted annotator (BANKING77, Chromium; 1-3, Enter, filters, n t o s d u)")
        head = ("ms/key", "labels", "keys/label", "wrong", "1st card s", "p50 ms", "p95 ms")
        print("".join(f"{h:>12}" for h in head))
        for r in result["queue"]["runs"]:
            cells = (
                r["key_delay_ms"],
                r["labels"],
                r["keys_per_label"],
                r["wrong"],
                r["first_card_after_pick_s"],
                r["key_to_next_p50_ms"],
                r["key_to_next_p95_ms"],
            )
            print("".join(f"{c:>12}" for c in cells))
    if args.skip_table:
        print(json.dumps(result, indent=2))
        return
    result["table"] = bench_table(args.data, [int(s) for s in args.sizes.split(",")])
    print("\nData table, first page of 100 (service call)")
    print(f"{'rows':>8} {'cold ms':>9} {'warm ms':>9} {'page 50':>9} {'search':>9}")
    for r in result["table"]:
        print(
            f"{r['rows']:>8} {r['first_page_cold_ms']:>9} {r['first_page_warm_ms']:>9} "
            f"{r['page_50_warm_ms']:>9} {r['text_filter_ms']:>9}"
        )
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
