"""Where the row index switches from an exact flat search to an IVF (issue 72 item 1:
:data:`core.retrieval.row_index.SWITCH_AT`): for each size, the time of what a key asks of it
("near an intent": 64 queries, 20 nearest each, the labelled rows left out; "the neighbours of
what was just labelled": 20 queries, 64 nearest) in both kinds, the IVF's recall of the exact
answer at :data:`~core.retrieval.row_index.NPROBE`, the time to build it (train and add) and to
read it back from disk. The vectors: ``--vectors`` (an embedding cache folder of real sentence
vectors, e.g. a bench's ``cache/<fingerprint>``), else clustered random unit vectors of 384
dimensions (40 clusters; harder for an IVF than sentence vectors).

Usage:
    nice -n 10 python -m bench.row_index --sizes 10000,25000,50000,100000,250000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from core.encoding.cache import read_shard
from core.retrieval.row_index import NPROBE, RowIndex


def vectors(n: int, folder: Path | None, seed: int = 0) -> np.ndarray:
    if folder is not None:
        found = [read_shard(p)[1] for p in sorted(folder.glob("shard-*.npz"))]
        x = np.concatenate(found)[:n]
        if len(x) < n:
            raise SystemExit(f"{folder} holds {len(x)} vectors, fewer than {n}")
        return x
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(40, 384)).astype(np.float32)
    x = centres[rng.integers(0, 40, n)] + 0.7 * rng.normal(size=(n, 384)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def timed(fn: Any, repeat: int = 5) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return 1000 * best, out


def one(n: int, x: np.ndarray) -> dict[str, Any]:
    ids = np.arange(n, dtype=np.int64)
    rng = np.random.default_rng(1)
    near_q = x[rng.choice(n, 64, replace=False)]
    new_q = x[rng.choice(n, 20, replace=False)]
    labelled = rng.choice(n, min(4000, n // 10), replace=False).tolist()
    row: dict[str, Any] = {"rows": n, "load": round(os.getloadavg()[0], 1)}
    flat = RowIndex(384, switch_at=10**9)
    t = time.perf_counter()
    flat.add(ids, x)
    row["flat_build_s"] = round(time.perf_counter() - t, 2)
    ivf = RowIndex(384, switch_at=1)
    t = time.perf_counter()
    ivf.add(ids, x)
    row["ivf_build_s"] = round(time.perf_counter() - t, 2)
    for name, index in (("flat", flat), ("ivf", ivf)):
        ms, found = timed(lambda index=index: index.search(near_q, 20, exclude=labelled))
        row[f"{name}_near_ms"] = round(ms, 1)
        row[f"_{name}_near"] = found[1]
        ms, found = timed(lambda index=index: index.search(new_q, 64))
        row[f"{name}_neighbours_ms"] = round(ms, 1)
        row[f"_{name}_neighbours"] = found[1]
    for what in ("near", "neighbours"):
        exact, approx = row.pop(f"_flat_{what}"), row.pop(f"_ivf_{what}")
        k = exact.shape[1]
        row[f"ivf_{what}_recall"] = round(
            float(np.mean([len(set(a) & set(b)) / k for a, b in zip(exact, approx, strict=True)])),
            3,
        )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.npz"
        ivf.save(path)
        t = time.perf_counter()
        RowIndex.load(path)
        row["ivf_read_s"] = round(time.perf_counter() - t, 2)
        row["file_mb"] = round(path.stat().st_size / 1e6, 0)
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", default="10000,25000,50000,100000,250000")
    ap.add_argument("--vectors", type=Path)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    x = vectors(max(sizes), args.vectors)
    rows = [one(n, x[:n]) for n in sizes]
    print(f"nprobe {NPROBE}; vectors: {args.vectors or 'clustered random, 384-d'}")
    cols = [
        "rows", "flat_near_ms", "ivf_near_ms", "ivf_near_recall", "flat_neighbours_ms",
        "ivf_neighbours_ms", "ivf_neighbours_recall", "ivf_build_s", "ivf_read_s", "file_mb", "load",
    ]  # fmt: skip
    print(" ".join(f"{c:>12}" for c in cols))
    for r in rows:
        print(" ".join(f"{r[c]!s:>12}" for c in cols))
    print(json.dumps(rows))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
