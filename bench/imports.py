"""Imports and labelling at once: how long an import of N synthetic rows takes, how long it holds
SQLite's write lock at a time, and how long a designer's label save waits meanwhile.

Each size runs twice on a fresh data directory: a new project (every row inserted), then the same
rows again with ``on_existing="relabel"`` and other intents (every row relabelled). During each
import a second thread saves a label in another project every 50 ms and times every save.

    python -m bench.imports --rows 10000,50000

Prints a table and a JSON line (also written to bench/results/imports.json).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
INTENTS = 80


def synthetic_rows(n: int, shift: int = 0) -> list[Any]:
    from storage.utterances import NewUtterance

    return [
        NewUtterance(
            f"utterance {i} about topic {i % INTENTS}", (f"topic_{(i + shift) % INTENTS}",)
        )
        for i in range(n)
    ]


def timed_writes(ctx: Any, holds: list[float]) -> None:
    """Record how long each ``ctx.db.write()`` of this thread's import lasts (BEGIN IMMEDIATE to
    COMMIT: the time the write lock is held)."""
    original = ctx.db.write
    importer = threading.get_ident()

    @contextmanager
    def write(*lock: Any) -> Iterator[Any]:
        if threading.get_ident() != importer:
            with original(*lock) as s:
                yield s
            return
        t = time.perf_counter()
        with original(*lock) as s:
            yield s
        holds.append(time.perf_counter() - t)

    ctx.db.write = write


def run_one(ctx: Any, rows: list[Any], on_existing: str, utterance_id: int) -> dict[str, Any]:
    from app.access import open_project
    from app.services.labelling import data as data_svc
    from app.services.projects.io import destination, import_utterances

    holds: list[float] = []
    waits: list[float] = []
    errors: list[str] = []
    done = threading.Event()

    def labeller() -> None:
        flip = 0
        while not done.is_set():
            t = time.perf_counter()
            try:
                data_svc.label_utterance(
                    ctx.db, open_project(ctx.db, "other"), utterance_id, ["a", "b"][flip % 2]
                )
            except Exception as exc:  # a BusyError is what the old code gave
                errors.append(type(exc).__name__)
            waits.append(time.perf_counter() - t)
            flip += 1
            time.sleep(0.05)

    result: dict[str, Any] = {}

    def importer() -> None:
        timed_writes(ctx, holds)
        t = time.perf_counter()
        res = import_utterances(ctx.db, destination(ctx.db, "big"), rows, on_existing=on_existing)
        result.update(
            import_s=round(time.perf_counter() - t, 2),
            inserted=res.inserted,
            updated=res.updated,
        )

    th = threading.Thread(target=importer)
    th.start()
    time.sleep(0.02)
    lab = threading.Thread(target=labeller)
    lab.start()
    th.join()
    done.set()
    lab.join()
    ctx.db.write = type(ctx.db).write.__get__(ctx.db)
    result.update(
        transactions=len(holds),
        longest_hold_s=round(max(holds), 3),
        label_saves=len(waits),
        longest_label_wait_s=round(max(waits), 3) if waits else None,
        label_errors=len(errors),
    )
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="10000,50000")
    args = ap.parse_args()

    from app.access import open_project
    from app.config import load_settings
    from app.services.labelling import data as data_svc
    from app.services.projects.io import destination, import_utterances

    try:  # the serving state (issue 59); a checkout before: AppContext(settings)
        from app.serving.state import ServingState

        open_state: Any = ServingState.open
    except ImportError:
        from app.serving.context import AppContext as open_state  # type: ignore[no-redef]
    from storage.utterances import NewUtterance

    results = []
    for n in (int(x) for x in args.rows.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            ctx = open_state(load_settings(Path(tmp)))
            import_utterances(
                ctx.db,
                destination(ctx.db, "other"),
                [NewUtterance("hello", ("a",)), NewUtterance("x", ("b",))],
            )
            uid = int(data_svc.table(ctx.db, open_project(ctx.db, "other"))[0]["id"])
            for kind, rows in (("insert", synthetic_rows(n)), ("relabel", synthetic_rows(n, 1))):
                r = run_one(ctx, rows, "relabel", uid)
                results.append({"rows": n, "kind": kind, **r})
                print(json.dumps(results[-1]), flush=True)
            ctx.close()
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "imports.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
