"""A bulk label of N rows and labelling at once: how long the bulk label (and its Undo) takes, how
long it holds SQLite's write lock at a time, and how long a designer's label save waits meanwhile
(issue 45 row 5: 10,000 rows held the lock for about 77 s; every save waited about 16 s, then
failed "database is busy").

A project of N unlabelled rows gets one intent by one bulk label (previewed, then applied with the
preview's token), then one Undo takes it back. During each, the main thread saves a label in
another project every 50 ms and times every save. ``--peer DIR`` runs the same on another
checkout (the commit before the change) first, in the same run.

    python -m bench.bulk_label --rows 10000 --peer /tmp/rows-peer

Prints a table and a JSON line (``--out FILE``: also written there).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def during_saves(ctx: Any, uid: int, work: Callable[[], Any]) -> dict[str, Any]:
    """Run ``work`` in a thread while this one saves a label every 50 ms: how long each of the
    work's write transactions held the lock, and how long each save waited."""
    from app.access import open_project
    from app.services.labelling import data as data_svc

    holds: list[float] = []
    waits: list[float] = []
    errors: list[str] = []
    out: dict[str, Any] = {}
    original = ctx.db.write

    @contextmanager
    def write(*lock: Any) -> Iterator[Any]:
        if threading.current_thread() is not th:
            with original(*lock) as s:
                yield s
            return
        t = time.perf_counter()
        with original(*lock) as s:
            yield s
        holds.append(time.perf_counter() - t)

    def worker() -> None:
        t = time.perf_counter()
        work()
        out["work_s"] = round(time.perf_counter() - t, 2)

    th = threading.Thread(target=worker)
    ctx.db.write = write
    th.start()
    time.sleep(0.05)
    flip = 0
    while th.is_alive():
        t = time.perf_counter()
        try:
            data_svc.label_utterance(
                ctx.db, open_project(ctx.db, "other"), uid, ["a", "b"][flip % 2]
            )
        except Exception as exc:  # a BusyError is what issue 45 row 5 saw
            errors.append(type(exc).__name__)
        waits.append(time.perf_counter() - t)
        flip += 1
        time.sleep(0.05)
    th.join()
    ctx.db.write = original
    return {
        **out,
        "transactions": len(holds),
        "longest_hold_s": round(max(holds), 3) if holds else None,
        "label_saves": len(waits),
        "longest_label_wait_s": round(max(waits), 3) if waits else None,
        "label_errors": len(errors),
    }


def run(n: int, code: Path = ROOT) -> dict[str, Any]:
    """The bulk label of ``n`` rows and its undo on the app of ``code`` (this process's)."""
    import importlib

    import app
    from app.access import open_project
    from app.config import load_settings
    from app.services.labelling import bulk as bulk_svc
    from app.services.labelling import data as data_svc
    from app.services.projects.io import destination, import_utterances

    try:  # the serving state (issue 59); a checkout before: AppContext(settings)
        from app.serving.state import ServingState

        open_state: Any = ServingState.open
    except ImportError:
        from app.serving.context import AppContext as open_state  # type: ignore[no-redef]
    from storage.utterances import NewUtterance, filtered_ids

    if code.resolve() not in Path(app.__file__).resolve().parents:
        raise RuntimeError(f"this process imports {app.__file__}, not the app of {code}")
    try:  # a peer from before the history module had undo in data
        undo_svc: Any = importlib.import_module("app.services.labelling.history")
    except ImportError:
        undo_svc = data_svc

    out: dict[str, Any] = {"code": str(code), "rows": n}
    with tempfile.TemporaryDirectory() as tmp:
        ctx = open_state(load_settings(Path(tmp)))
        seed = [NewUtterance("hello", ("a",)), NewUtterance("x", ("b",))]
        import_utterances(ctx.db, destination(ctx.db, "other"), seed)
        uid = int(data_svc.table(ctx.db, open_project(ctx.db, "other"))[0]["id"])
        rows = [NewUtterance(f"utterance {i}", (), "unlabelled") for i in range(n)]
        import_utterances(ctx.db, destination(ctx.db, "big"), [NewUtterance("seed", ("t",)), *rows])
        p = open_project(ctx.db, "big")
        with ctx.db.session() as s:
            ids = filtered_ids(s, p.id, split="unlabelled")
        t = time.perf_counter()
        plan = bulk_svc.plan_label(ctx.db, p, ids, ["t"])
        out["preview_s"] = round(time.perf_counter() - t, 2)
        done: dict[str, Any] = {}

        def label() -> None:
            done["plan"] = bulk_svc.label_many(ctx.db, p, ids, ["t"], token=plan.token)

        out["label"] = {"changed": 0, **during_saves(ctx, uid, label)}
        out["label"]["changed"] = len(done["plan"].change)
        out["undo"] = during_saves(
            ctx, uid, lambda: undo_svc.undo_batch(ctx.db, p, done["plan"].batch)
        )
        ctx.close()
    return out


def _table(runs: list[dict[str, Any]]) -> None:
    head = ("code", "step", "rows", "work s", "txns", "max hold s", "saves", "max wait s", "errors")
    print("".join(f"{h:>12}" for h in head))
    for r in runs:
        for step in ("label", "undo"):
            x = r[step]
            cells = [Path(r["code"]).name, step, r["rows"], x["work_s"], x["transactions"]]
            cells += [x["longest_hold_s"], x["label_saves"], x["longest_label_wait_s"]]
            print("".join(f"{c!s:>12}" for c in (*cells, x["label_errors"])))


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--peer", type=Path, help="another checkout to run the same on, first")
    ap.add_argument("--root", type=Path, help=argparse.SUPPRESS)  # a peer's run: its code
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.root:
        print(json.dumps(run(args.rows, args.root)))
        return
    runs = []
    if args.peer:
        # this script's file, the peer's app: the peer's folder first on the child's path
        peer = str(args.peer.resolve())
        path = os.pathsep.join(filter(None, [peer, os.environ.get("PYTHONPATH")]))
        cmd = [sys.executable, __file__, "--rows", str(args.rows), "--root", peer]
        env = {**os.environ, "PYTHONPATH": path}
        done = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    runs.append(run(args.rows))
    _table(runs)
    print(json.dumps(runs))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(runs, indent=2))


if __name__ == "__main__":
    main()
