"""Each step's cost against the project's size (issue 72 item 7): projects of 4k, 25k, 60k and
250k rows (:mod:`bench.dump_data`: 770 labelled BANKING77 questions, its test split, the rest
unlabelled logs) imported by the CLI into a fresh data directory, then, in one process on that
directory, what a designer asks of a log dump: candidate intents over every unlabelled row,
conflicts over every labelled row, the map (PCA, then UMAP in the projecting process) of every row,
its figure (the points drawn, the bytes sent), a lasso over a quarter of it, and the Label tab's
next 20 cards over REST. Each step is timed once per size; the table gives the seconds at each size
and the slope (least squares: seconds per 10,000 rows, and the fit's R²), and the JSON the same.

Vectors are not encoded here (the background encoding is issue 72 item 2's; on a loaded 2-core box
MiniLM encodes 20-40 texts a second, hours for 250k): the public texts are encoded once into
``<work>/cache`` (the real encoder, through the app's embedding cache) and each variation gets its
base log's vector with seeded Gaussian noise (cosine about 0.93 to it, as ``bench.clusters``
perturbs), written into each data directory's cache under the encoder's fingerprint before the
steps run, so every step finds every row encoded. The encoder's own rate is measured beside
(``encode_per_s``) to say what encoding a size would cost.

Usage:
    nice -n 10 .venv/bin/python -m bench.sizes --sizes 4000,25000,60000,250000
    nice -n 10 .venv/bin/python -m bench.sizes --sizes 4000 --steps clusters,map_pca
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import dump_data
from bench._checkouts import load_average
from bench._common import offline_models

ROOT = Path(__file__).resolve().parents[1]
PROJECT = "dump"
STEPS = ("clusters", "conflicts", "map_pca", "map_umap", "figure", "lasso", "queue_rest")


def encode_public(data: Path, cache_dir: Path) -> tuple[str, float]:
    """Encode every public text of the bench projects into ``cache_dir`` (once: a later call
    finds them there); the encoder's fingerprint and its rate on 256 texts not encoded before
    (texts per second, after a warm-up batch)."""
    from core.encoding.cache import EmbeddingCache
    from core.encoding.registry import load_encoder

    rows = dump_data.labelled(data)
    rows += dump_data._unique(dump_data.logs(data), {r.text for r in rows})
    encoder = load_encoder("minilm", device="cpu")
    cache = EmbeddingCache(cache_dir)
    texts = [r.text for r in rows]
    for start in range(0, len(texts), 2000):
        cache.encode(encoder, texts[start : start + 2000])
    probe = [f"{t} (rate probe {i})" for i, t in enumerate(texts[:256])]
    encoder.encode(probe[:32])
    began = time.perf_counter()
    encoder.encode(probe)
    return encoder.fingerprint, len(probe) / (time.perf_counter() - began)


def seed_vectors(rows: list[dump_data.Row], public: Path, target: Path, fingerprint: str) -> int:
    """Every row's vector in the data directory's cache ``target`` under ``fingerprint``: the
    public texts' from ``public``, each variation its base's with seeded noise; how many were
    made up."""
    from core.encoding.cache import EmbeddingCache, read_shard, text_key, write_shard
    from core.retrieval.knn import normalise

    name = EmbeddingCache._name(fingerprint)
    known: dict[str, np.ndarray] = {}
    for shard in sorted((public / name).glob("shard-*.npz")):
        keys, vectors = read_shard(shard)
        known.update(zip(keys, vectors, strict=True))
    folder = target / name
    folder.mkdir(parents=True, exist_ok=True)
    for shard in (public / name).glob("shard-*.npz"):
        shutil.copy(shard, folder / shard.name)
    made = [r for r in rows if r.base and text_key(r.text) not in known]
    for start in range(0, len(made), 50_000):
        part = made[start : start + 50_000]
        base = np.stack([known[text_key(r.base)] for r in part])
        rng = np.random.default_rng(int(text_key(part[0].text)[:8], 16))
        noisy = normalise(base + rng.normal(0, 0.02, base.shape).astype(np.float32))
        write_shard(folder, [text_key(r.text) for r in part], noisy.astype(np.float32))
    return len(made)


def import_parts(parts: list[Path], data_dir: Path) -> float:
    """The CLI's import of each part into ``data_dir``, one after another; seconds in all."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "INTENT_STUDIO_DATA_DIR": str(data_dir)}
    began = time.perf_counter()
    for part in parts:
        done = subprocess.run(
            [sys.executable, "-m", "app", "import", str(part), "--project", PROJECT],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise RuntimeError(f"import of {part} failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - began


def _rss_mb(pid: int | None = None) -> float:
    import psutil

    return psutil.Process(pid).memory_info().rss / 2**20


def run_steps(data_dir: Path, steps: list[str]) -> dict[str, Any]:
    """Open the data directory as the server does and time each step once."""
    from fastapi.testclient import TestClient

    from app.access import open_project
    from app.api import create_api
    from app.config import load_settings
    from app.services.design import clusters, conflicts, map_region, maps
    from app.serving.state import ServingState

    out: dict[str, Any] = {}
    state = ServingState.open(load_settings(data_dir))
    try:
        p = open_project(state.db, PROJECT)
        began = time.perf_counter()  # as the server does at start-up: not in the map's time
        state.maps.projector.warm_up(large=True)
        out["umap_warm_up_s"] = round(time.perf_counter() - began, 2)
        began = time.perf_counter()
        state.live.pool(p.id)
        out["pool_s"] = round(time.perf_counter() - began, 2)
        view = None
        for step in steps:
            began = time.perf_counter()
            extra: dict[str, Any] = {}
            if step == "clusters":
                found = clusters.candidate_intents(state.live, p)
                extra = {"clusters": len(found), "rows_in_clusters": sum(c.size for c in found)}
            elif step == "conflicts":
                extra = {"conflicts": len(conflicts.find(state.live, p))}
            elif step in ("map_pca", "map_umap"):
                view = maps.compute_map(state.maps, p, method=step.removeprefix("map_"))
                extra = {"points": len(view.ids)}
            elif step == "figure" and view is not None:
                fig = maps.map_figure(view)
                extra = {
                    "drawn": fig.layout.meta["n_points"],
                    "json_mb": len(fig.to_json()) / 2**20,
                }
            elif step == "lasso" and view is not None:
                ids, rows = map_region.select_region(state.maps, p, _quarter(view))
                extra = {"selected": len(ids), "of": rows}
            elif step == "queue_rest":
                with TestClient(create_api(state)) as client:
                    got = client.get(f"/api/v1/projects/{PROJECT}/queue", params={"limit": 20})
                    got.raise_for_status()
                extra = {"items": len(got.json()["items"])}
            else:
                continue
            seconds = time.perf_counter() - began
            out[step] = {"seconds": round(seconds, 2), "rss_mb": round(_rss_mb()), **extra}
            print(f"  {step}: {seconds:.1f}s {extra}", flush=True)
        proc = state.maps.projector._proc
        if proc is not None and proc.poll() is None:
            out["projector_rss_mb"] = round(_rss_mb(proc.pid))
    finally:
        state.close()
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return out


def _quarter(view: Any) -> str:
    """A lasso of 200 vertices around the map's lower-left quarter (a circle through it)."""
    pts = np.asarray(view.points)
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    centre, radius = lo + (hi - lo) / 4, (hi - lo) / 4
    angles = np.linspace(0, 2 * math.pi, 200, endpoint=False)
    xs = (centre[0] + radius[0] * np.cos(angles)).tolist()
    ys = (centre[1] + radius[1] * np.sin(angles)).tolist()
    return json.dumps({"view": view.token, "x": xs, "y": ys})


def slopes(results: list[dict[str, Any]], steps: list[str]) -> dict[str, dict[str, float]]:
    """Per step: seconds per 10,000 rows (least squares over the sizes) and the fit's R²."""
    out = {}
    for step in ["import", *steps]:
        pairs = [
            (r["rows"], r["steps"][step]["seconds"]) for r in results if step in r.get("steps", {})
        ]
        if len(pairs) < 2:
            continue
        x, y = np.array(pairs, dtype=float).T
        b, a = np.polyfit(x, y, 1)
        fit = a + b * x
        ss = float(((y - y.mean()) ** 2).sum())
        r2 = 1.0 - float(((y - fit) ** 2).sum()) / ss if ss > 0 else 1.0
        out[step] = {
            "per_10k_rows_s": round(b * 10_000, 3),
            "intercept_s": round(a, 2),
            "r2": round(r2, 3),
        }
    return out


def table(
    results: list[dict[str, Any]], fits: dict[str, dict[str, float]], steps: list[str]
) -> str:
    sizes = [r["rows"] for r in results]
    lines = [
        "| step | " + " | ".join(f"{n:,} rows (s)" for n in sizes) + " | s per 10k rows | R² |",
        "|---|" + "---|" * (len(sizes) + 2),
    ]
    for step in ["import", *steps]:
        cells = [str(r["steps"].get(step, {}).get("seconds", "–")) for r in results]
        fit = fits.get(step, {})
        lines.append(
            f"| {step} | "
            + " | ".join(cells)
            + f" | {fit.get('per_10k_rows_s', '–')} | {fit.get('r2', '–')} |"
        )
    lines.append(
        "| peak RSS (MB) | " + " | ".join(str(r["peak_rss_mb"]) for r in results) + " | | |"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=dump_data.DEFAULT_DATA)
    ap.add_argument("--sizes", default=",".join(map(str, dump_data.SIZES)))
    ap.add_argument("--steps", default=",".join(STEPS))
    ap.add_argument("--work", type=Path, default=ROOT / "bench" / "results" / "sizes")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    offline_models()
    steps = [s for s in args.steps.split(",") if s]
    fingerprint, rate = encode_public(args.data, args.work / "cache")
    results: list[dict[str, Any]] = []
    for size in (int(s) for s in args.sizes.split(",")):
        rows = dump_data.build(args.data, size)
        parts = dump_data.write_parts(rows, args.work / "csv", f"dump-{size}")
        data_dir = args.work / f"data-{size}"
        shutil.rmtree(data_dir, ignore_errors=True)
        load = load_average()
        print(f"{size:,} rows (load {load})", flush=True)
        imported = import_parts(parts, data_dir)
        made = seed_vectors(rows, args.work / "cache", data_dir / "cache", fingerprint)
        measured = run_steps(data_dir, steps)
        measured["import"] = {"seconds": round(imported, 2), "files": len(parts)}
        results.append(
            {
                "rows": size,
                "unlabelled": sum(r.split == "unlabelled" for r in rows),
                "variations": made,
                "load_before": load,
                "load_after": load_average(),
                "steps": measured,
                "peak_rss_mb": measured.pop("peak_rss_mb"),
                "projector_rss_mb": measured.pop("projector_rss_mb", None),
                "pool_s": measured.pop("pool_s"),
                "umap_warm_up_s": measured.pop("umap_warm_up_s"),
            }
        )
    fits = slopes(results, steps)
    report = {
        "cpu_count": os.cpu_count(),
        "encoder": fingerprint,
        "encode_per_s": round(rate, 1),
        "results": results,
        "slopes": fits,
    }
    print(table(results, fits, steps))
    print(f"encoder: {rate:.1f} texts/s here (250,000 rows: {250_000 / rate / 3600:.1f} h)")
    text = json.dumps(report, indent=2)
    print(text)
    out = args.json or args.work / "sizes.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
