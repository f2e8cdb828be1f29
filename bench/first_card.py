"""Benchmark: the first card of the labelling queue after the app (re)starts, on the BANKING77
project of issue 25 (770 train, 1,000 test, 2,000 unlabelled: 3,770 rows, from
``../shared/data``), through the app's services in a fresh process each time.

Scenarios, one data directory in order:

* **first ever**: nothing encoded yet (every utterance the card needs is encoded);
* **restart**: a new process on the same data directory (the frozen encoder's vectors on disk);
* with ``--retrain``: **retrain** (``intent-studio train``, the default recipe, in the worker's
  place) then **restart after retrain** (the new version's space, int8 when it passed parity).

Each row: ``load_s`` (a fresh process importing the app and loading the served encoder, what the
server's start-up warm-up does before anyone picks a project), ``card_s`` (picking the project:
:func:`app.services.queue.queue.next_item` on the freshly started context), ``total_s`` (process start
to the card) and ``encoded`` (texts the real encoder encoded, ``EmbeddingCache.encoded``).

``--code PATH`` runs another checkout (e.g. a ``git worktree`` of the commit before) for a before
→ after table. Timings swing 2-4x on a shared 2-core machine: say so when you report them.

Measured 2026-11-24 on the shared 2-core machine (other sessions running; one run each, the
commit before this bench → this one; total_s = process start to the card, encoded = texts):

    scenario                 before: total_s  encoded    after: total_s  encoded
    first ever                        15.5     3846             16.0     3846
    restart (frozen MiniLM)            6.0        0              6.0        0   (5.0 s loading it)
    retrain (worker, CLI)             54.5       --             59.6       --
    restart after retrain              5.9     3846              1.7        0   (int8 served)
    restart again                      1.7        0              1.6        0

Usage:
    python -m bench.first_card --data ../shared/data --retrain --out bench/results/first_card.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._checkouts import PIECES

ROOT = Path(__file__).resolve().parents[1]

# Runs in the measured process (any checkout): a fresh context, the served encoder, the card.
CHILD = r"""
import json, sys, time
started = time.perf_counter()
from app.config import load_settings
try:  # the serving state (issue 59); a checkout before: AppContext(settings)
    from app.serving.state import ServingState
except ImportError:
    from app.serving.context import AppContext as ServingState
from app.services.queue import queue
from core.encoding import cache as cache_mod
counted = {"n": 0}
if not hasattr(cache_mod.EmbeddingCache(None), "encoded"):  # a checkout without the counter
    plain = cache_mod.EmbeddingCache.encode
    def counting(self, encoder, texts, **kw):
        counted["n"] += len(self.missing(encoder, texts)) if len(texts) else 0
        return plain(self, encoder, texts, **kw)
    cache_mod.EmbeddingCache.encode = counting
# PIECES: bench._checkouts
ctx = getattr(ServingState, "open", ServingState)(load_settings())
with ctx.db.session() as s:
    from storage.projects import get_project
    project = get_project(s, "banking77")
    pid, base, settings = project.id, project.base_encoder, dict(project.settings or {})
    try:  # settings typed (issue 59): from the row (issue 76) or its JSON; before, the dict
        import app.project_settings as typed
        settings = (typed.settings_of(project) if hasattr(typed, "settings_of")
                    else typed.stored_settings(project.name, settings))
    except (ImportError, AttributeError):
        pass
mv, _ = ctx.factories.active_version(pid)
ctx.models.serving_encoder(mv, base, settings)
loaded = time.perf_counter()
found, _ = queue.next_item(_piece(ctx, queue.next_item), _open(ctx, "banking77"), [])
card = time.perf_counter()
print(json.dumps({
    "load_s": round(loaded - started, 2),
    "card_s": round(card - loaded, 2),
    "total_s": round(card - started, 2),
    "encoded": getattr(ctx.live.cache, "encoded", counted["n"]),
    "version": mv.id if mv is not None else None,
    "card": found.text[:60] if found else None,
}))
"""
CHILD = CHILD.replace("# PIECES: bench._checkouts\n", PIECES)


def _run(code: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, *args], cwd=code, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:3])} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def measure(code: Path, env: dict[str, str]) -> dict[str, Any]:
    lines = _run(code, env, "-c", CHILD).strip().splitlines()
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def bench(data: Path, code: Path, retrain: bool) -> list[dict[str, Any]]:
    from tests.e2e.conftest import banking77_csv

    root = Path(tempfile.mkdtemp(prefix="bench-first-card-"))
    src = banking77_csv(data, root / "banking77.csv", unlabelled=2000, test=1000)
    env = {
        **os.environ,
        "INTENT_STUDIO_DATA_DIR": str(root / "data"),
        "PYTHONPATH": str(code),
        "TOKENIZERS_PARALLELISM": "false",
    }
    env.pop("INTENT_STUDIO_ARTIFACTS_URL", None)
    _run(code, env, "-m", "app", "import", str(src), "--project", "banking77")
    rows = [{"scenario": "first ever", **measure(code, env)}]
    rows.append({"scenario": "restart", **measure(code, env)})
    if retrain:
        began = time.perf_counter()
        _run(code, env, "-m", "app", "train", "--project", "banking77")
        rows.append(
            {"scenario": "retrain (worker)", "total_s": round(time.perf_counter() - began, 1)}
        )
        rows.append({"scenario": "restart after retrain", **measure(code, env)})
        rows.append({"scenario": "restart again", **measure(code, env)})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--code", type=Path, default=ROOT, help="the checkout to measure")
    ap.add_argument("--retrain", action="store_true", help="also retrain and restart after it")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    rows = bench(args.data, args.code.resolve(), args.retrain)
    print(f"\nFirst card after (re)start, BANKING77 3,770 rows, code: {args.code}")
    print(f"{'scenario':<24}{'load_s':>8}{'card_s':>8}{'total_s':>9}{'encoded':>9}  version")
    for r in rows:
        print(
            f"{r['scenario']:<24}{r.get('load_s', ''):>8}{r.get('card_s', ''):>8}"
            f"{r.get('total_s', ''):>9}{r.get('encoded', ''):>9}  {r.get('version', '')}"
        )
    report = {"code": str(args.code), "rows": rows}
    print(json.dumps(report))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
