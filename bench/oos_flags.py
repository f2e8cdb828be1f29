"""Benchmark: how often the app flags an in-scope question "looks out of scope", and how many real
out-of-scope questions it still catches, through the app's own services (the served Predictor,
its calibration, the Label queue's default order) before any retrain (frozen encoder).

* **BANKING77** (issue 25 item 3): the project of ``tests/e2e/conftest.banking77_csv`` at the
  size the issue tried (10-shot seed-0 train, 770 rows; 1,000 test rows; 2,000 unlabelled rows,
  all in scope). ``test_flagged``: share of the in-scope test rows the live Predictor calls out
  of scope; ``queue_flagged@N``: share of the first N cards of the queue's default order shown
  "Looks out of scope".
* **CLINC150**: the 10-shot seed-0 train (1,500 rows) and 1,000 in-scope test rows as a project;
  ``test_flagged`` as above and ``oos_recall``: share of CLINC150's out-of-scope test questions
  (``test_oos.csv``) the live Predictor calls out of scope (so "flag less" is not "never flag").
* ``*_hint``: the same rows as a Label-queue card would flag them ("looks out of scope":
  :meth:`core.evaluation.oos.Calibration.looks_out_of_scope`, stricter for uncertain cards).

Usage:
    python -m bench.oos_flags --data ../shared/data [--cards 32 100] [--json out.json]
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def _write(rows: list[tuple[str, str, str]], out: Path) -> Path:
    seen: set[str] = set()
    with out.open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label", "split"])
        for row in rows:
            if row[0] not in seen:
                seen.add(row[0])
                w.writerow(row)
    return out


def banking77(data: Path, out: Path, test: int = 1000, unlabelled: int = 2000) -> Path:
    """The rows of ``tests/e2e/conftest.banking77_csv`` (same seeds, issue 25's sizes)."""
    folder = data / "banking77"
    train = _read(folder / "train_10shot_seed0.csv")
    taken = {r["text"] for r in train}
    rng = random.Random(0)
    pool = [r for r in _read(folder / "train.csv") if r["text"] not in taken]
    rows = [(r["text"], r["label"], "train") for r in train]
    rows += [(r["text"], r["label"], "test") for r in rng.sample(_read(folder / "test.csv"), test)]
    rows += [(r["text"], "", "unlabelled") for r in rng.sample(pool, unlabelled)]
    return _write(rows, out)


def clinc150(data: Path, out: Path, test: int = 1000) -> Path:
    folder = data / "clinc150"
    rows = [(r["text"], r["label"], "train") for r in _read(folder / "train_10shot_seed0.csv")]
    sample = random.Random(0).sample(_read(folder / "test.csv"), test)
    rows += [(r["text"], r["label"], "test") for r in sample]
    return _write(rows, out)


def _flagged(ctx: Any, project: str, texts: list[str]) -> tuple[float, float | None]:
    """The share of ``texts`` the live Predictor calls out of scope, and the share a card would
    show "looks out of scope" (the calibration's hint, None where this code has none)."""
    from app.access import open_project
    from app.services.models.predict import predict

    p = open_project(ctx.db, project)
    rows = [r for i in range(0, len(texts), 100) for r in predict(ctx.live, p, texts[i : i + 100])]
    served = sum(bool(r["oos"]) for r in rows) / max(1, len(rows))
    cal = ctx.live.pool(p.id).calibration
    if cal is None or not hasattr(cal, "looks_out_of_scope"):
        return served, None
    hint = [cal.looks_out_of_scope(bool(r["oos"]), r["score"], r["margin"]) for r in rows]
    return served, sum(hint) / max(1, len(rows))


def measure(data: Path, cards: list[int]) -> list[dict[str, Any]]:
    from app.access import open_project
    from app.config import load_settings
    from app.services.projects.io import destination, import_file
    from app.services.queue import queue as queue_svc
    from app.serving.state import ServingState
    from storage.utterances import list_utterances

    out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="oos-flags-") as tmp:
        root = Path(tmp)
        ctx = ServingState.open(load_settings(root / "data"))
        try:
            for name, build in (("banking77", banking77), ("clinc150", clinc150)):
                started = time.perf_counter()
                import_file(ctx.db, destination(ctx.db, name), build(data, root / f"{name}.csv"))
                pid = open_project(ctx.db, name).id
                with ctx.db.session() as s:
                    tests = [r.text for r in list_utterances(s, pid, split="test")]
                pool = ctx.live.pool(pid)
                row: dict[str, Any] = {
                    "data": name,
                    "threshold": (pool.calibration.default if pool.calibration else None),
                    "calibration": pool.calibration.message() if pool.calibration else "",
                    "test_rows": len(tests),
                }
                row["test_flagged"], row["test_hint"] = _flagged(ctx, name, tests)
                if name == "banking77":
                    ids = queue_svc.order(ctx.live, open_project(ctx.db, name), limit=max(cards))
                    flags = []
                    for i in ids:
                        item = queue_svc.item(ctx.live, open_project(ctx.db, name), i)
                        flags.append(bool(item is not None and item.out_of_scope))
                    for n in cards:
                        row[f"queue_flagged@{n}"] = sum(flags[:n]) / max(1, len(flags[:n]))
                else:
                    oos = [r["text"] for r in _read(data / "clinc150" / "test_oos.csv")]
                    row["oos_rows"] = len(oos)
                    row["oos_recall"], row["oos_hint_recall"] = _flagged(ctx, name, oos)
                row["seconds"] = round(time.perf_counter() - started, 1)
                out.append(row)
        finally:
            ctx.close()
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--cards", type=int, nargs="+", default=[32, 100])
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    rows = measure(args.data, args.cards)
    cols = ["data", "threshold", "test_flagged", "test_hint"]
    cols += [f"queue_flagged@{n}" for n in args.cards] + ["oos_recall", "oos_hint_recall"]
    print(" | ".join(f"{c:>17}" for c in cols))
    for row in rows:
        cells = []
        for c in cols:
            v = row.get(c)
            cells.append(f"{v:>17.3f}" if isinstance(v, float) else f"{v!s:>17}")
        print(" | ".join(cells))
    for row in rows:
        print(f"{row['data']}: {row['calibration']}")
    text = json.dumps(rows, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
