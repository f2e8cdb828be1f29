"""Benchmark: does a model bundle answer as the app serving its version? (issue 66 item 5)

The BANKING77 project of ``bench/cli.py`` (10-shot seed 0, 770 train, 500 test questions) is
imported and trained once by the first checkout's CLI (on a CPU the version serves its int8
copy; list the older checkout first: a newer one migrates the database forward).
Then, for each checkout (``--peer REV`` archives a commit of this repository, ``--code PATH``
any checkout), a child process of that code asks the app for ``--lines`` held-out BANKING77
questions (test questions the project does not hold) with the version's int8 copy serving,
exports an int8 bundle, turns ``serve_int8`` off, asks again (fp32) and exports an fp32 bundle.
Each bundle's own ``predict.py`` then answers the same questions in a bare environment (numpy,
onnxruntime and tokenizers only, ``python -S``: no app installed), and the table counts the
questions where its top intent and its out-of-scope flag are the app's, per precision, beside
the bundle's and the app's out-of-scope thresholds.

Last, the int8 bundle's ``predict.py`` is timed on the ``--lines`` questions (one process, from
start to exit, ``--threads`` threads; median of ``--repeats``), with the load average beside it:
the machine is shared.

Usage:
    python -m bench.bundle_parity --peer main --code . --out bench/results/bundle_parity.json
    python -m bench.bundle_parity --code . --lines 200 --train-set epochs=1   # a quick check
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

from bench._checkouts import load_average, peer_checkout, revision
from bench.cli import PROJECT, cli

ROOT = Path(__file__).resolve().parents[1]

# Run by each checkout on the trained data directory: the app's answers, then its bundles.
CHILD = r"""
import json, sys
from pathlib import Path
from app.config import load_settings
from app.serving.state import ServingState
from app.services.models import predict as predict_svc
from app.services.projects import bundles, projects as project_svc
from app.access import open_project

data, out = Path(sys.argv[1]), Path(sys.argv[2])
texts = json.loads(Path(sys.argv[3]).read_text())
ctx = ServingState.open(load_settings(data))
result = {}
try:
    for precision, serve in (("int8", "on"), ("fp32", "off")):
        project_svc.set_settings(ctx.db, open_project(ctx.db, "banking77"), {"serve_int8": serve})
        p = open_project(ctx.db, "banking77")
        pool = ctx.live.settled(p.id) if hasattr(ctx.live, "settled") else ctx.live.pool(p.id)
        if not hasattr(ctx.live, "settled"):  # older code: wait for a calibration under way
            import time
            while pool.calibration_due:
                time.sleep(0.2)
        answers = predict_svc.predict(ctx.live, p, texts)
        path = out / f"{precision}.zip"
        bundles.export_bundle(ctx.live, p, path, int8=precision == "int8")
        result[precision] = {
            "encoder": type(pool.encoder).__name__,
            "thresholds": dict(pool.predictor.thresholds),
            "answers": [[a["top"], a["oos"]] for a in answers],
            "bundle": str(path),
        }
finally:
    project_svc.set_settings(ctx.db, open_project(ctx.db, "banking77"), {"serve_int8": "on"})
    ctx.close()
(out / "app.json").write_text(json.dumps(result))
"""


def held_out(shared: Path, n: int, taken: set[str]) -> list[str]:
    """``n`` BANKING77 test questions the project does not hold, in the file's order."""
    with (shared / "banking77" / "test.csv").open(encoding="utf-8", newline="") as f:
        return [r["text"] for r in csv.DictReader(f) if r["text"] not in taken][:n]


def train_project(code: Path, place: Path, shared: Path, train_set: list[str]) -> Path:
    """The project imported and trained once by ``code`` in ``place/data`` (reused)."""
    from tests.e2e.conftest import banking77_csv

    data = place / "data"
    if (place / "trained").is_file():
        return data
    place.mkdir(parents=True, exist_ok=True)
    project_csv = banking77_csv(shared, place / "banking77.csv", unlabelled=0, test=500)
    cli(code, data, ["import", str(project_csv), "--project", PROJECT])
    train = ["train", "--project", PROJECT, *[a for kv in train_set for a in ("--set", kv)]]
    cli(code, data, train)
    (place / "trained").write_text("")
    return data


def standalone(
    bundle: Path, texts: list[str], place: Path, threads: int
) -> tuple[list, float, float]:
    """``python -S predict.py --json`` of the unzipped bundle in a bare environment: its
    answers, the process's wall seconds and its CPU seconds (every thread)."""
    from tests.core.bundle.test_standalone import only_the_runtime

    folder = place / f"unzipped-{bundle.parent.name}-{bundle.stem}"
    if not folder.is_dir():
        with zipfile.ZipFile(bundle) as zf:
            zf.extractall(folder)
    env = {**only_the_runtime(place), "OMP_NUM_THREADS": str(threads)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-S", str(folder / "predict.py"), "--json", "--threads", str(threads)],
        input="\n".join(texts) + "\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=place,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise RuntimeError(f"predict.py failed:\n{done.stderr[-3000:]}")
    return [json.loads(line) for line in done.stdout.splitlines()], wall, cpu


def measure(code: Path, data: Path, texts: list[str], place: Path, threads: int) -> dict[str, Any]:
    """One checkout's app answers and bundles, each bundle's answers compared with them."""
    out = place / f"out-{code.name}"
    out.mkdir(parents=True, exist_ok=True)
    (place / "texts.json").write_text(json.dumps(texts))
    env = {**os.environ, "PYTHONPATH": str(code), "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(data), str(out), str(place / "texts.json")],
        cwd=code,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{code}: the app's side failed:\n{done.stderr[-4000:]}")
    app = json.loads((out / "app.json").read_text())
    rows: dict[str, Any] = {}
    for precision, said in app.items():
        bundle = Path(said["bundle"])
        alone, _, _ = standalone(bundle, texts, place, threads)
        manifest = json.loads(zipfile.ZipFile(bundle).read("manifest.json"))
        pairs = list(zip(said["answers"], alone, strict=True))
        rows[precision] = {
            "app_encoder": said["encoder"],
            "same_top": sum(a[0] == b["top"] for a, b in pairs),
            "same_oos": sum(a[1] == b["oos"] for a, b in pairs),
            "same_both": sum(a[0] == b["top"] and a[1] == b["oos"] for a, b in pairs),
            "n": len(pairs),
            "app_threshold": said["thresholds"].get("default"),
            "bundle_threshold": (manifest.get("thresholds") or {}).get("default"),
            "bundle": str(bundle),
        }
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--code", type=Path, action="append", default=[], help="a checkout")
    ap.add_argument("--peer", action="append", default=[], help="a commit of this repository")
    ap.add_argument("--lines", type=int, default=1000, help="held-out questions")
    ap.add_argument("--threads", type=int, default=2, help="predict.py's threads")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs of predict.py")
    ap.add_argument("--train-set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--work", type=Path, default=None, help="where the project goes (reused)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    work = (args.work or Path(tempfile.mkdtemp(prefix="bench-bundle-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    codes = [peer_checkout(rev, work) for rev in args.peer] + [c.resolve() for c in args.code]
    codes = codes or [ROOT]
    # trained by the first checkout: a later one migrates its database forward, never back
    data = train_project(codes[0], work / "project", args.data.resolve(), args.train_set)
    with (work / "project" / "banking77.csv").open(encoding="utf-8", newline="") as f:
        taken = {r["text"] for r in csv.DictReader(f)}
    texts = held_out(args.data.resolve(), args.lines, taken)
    report: dict[str, Any] = {"lines": len(texts), "threads": args.threads, "checkouts": {}}
    print(f"{'checkout':<16} {'precision':<9} {'app serves':<12} {'top':>6} {'oos':>6} "
          f"{'both':>6} {'app thr.':>9} {'bundle thr.':>11}")  # fmt: skip
    for code in codes:
        rows = measure(code, data, texts, work, args.threads)
        name = revision(code) or code.name
        report["checkouts"][name] = rows
        for precision, r in rows.items():
            app_t, bundle_t = r["app_threshold"], r["bundle_threshold"]
            print(
                f"{name:<16} {precision:<9} {r['app_encoder']:<12} {r['same_top']:>6} "
                f"{r['same_oos']:>6} {r['same_both']:>6} "
                f"{app_t if app_t is None else round(app_t, 4)!s:>9} "
                f"{bundle_t if bundle_t is None else round(bundle_t, 4)!s:>11}"
            )
    last = report["checkouts"][revision(codes[-1]) or codes[-1].name]["int8"]
    timings = []
    for _ in range(args.repeats):
        load = load_average()
        _, wall, cpu = standalone(Path(last["bundle"]), texts, work, args.threads)
        timings.append({"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "load": load})
    median = statistics.median(t["wall_s"] for t in timings)
    cpu = statistics.median(t["cpu_s"] for t in timings)
    report["predict_py_int8"] = {"runs": timings, "median_s": median, "lines": len(texts)}
    print(
        f"\npredict.py (int8, {args.threads} threads) on {len(texts):,} lines: {median:.2f} s "
        f"wall, {cpu:.2f} s CPU, median of {args.repeats} (load average "
        f"{[t['load'] for t in timings]}, {os.cpu_count()} cores)"
    )
    print(json.dumps(report, indent=2))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
