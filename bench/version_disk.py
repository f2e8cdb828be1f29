"""Benchmark: the disk a project's versions use (issue 71 item 4, issue 73 item 5).

A MiniLM project (``--train`` BANKING77 10-shot utterances of the seed-0 file, ``--test`` test
questions: enough for the int8 copy's parity check) retrained ``--retrains`` times by the
worker's own job path, automatically (``trigger="auto"``, as the watcher asks), each after
``--labels`` more labelled utterances; the retention rule runs after each job as in a worker.
Per version: its artifact's bytes (the tuned layers) and its int8 copy's (what the base
encoder's copy does not already hold); after each job: the bytes under the project's folder of
the artifact store and how many versions keep files. The base encoder's shared int8 copy is
counted once, apart. A version's size does not depend on the project's size (its tuned layers
and their int8 form), so a small project measures it.

Usage:
    python -m bench.version_disk --retrains 50
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import offline_models

ROOT = Path(__file__).resolve().parents[1]
offline_models()


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--retrains", type=int, default=50)
    ap.add_argument("--train", type=int, default=154, help="labelled utterances to start with")
    ap.add_argument("--test", type=int, default=400, help="test questions (parity: 99 %)")
    ap.add_argument("--labels", type=int, default=2, help="new labels before each retrain")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "version-disk.json")
    args = ap.parse_args(argv)
    os.environ.setdefault("INTENT_STUDIO_INT8", "on")

    from app import worker
    from app.access import open_project
    from app.access.auth import LOCAL
    from app.config import load_settings
    from app.services.labelling import data as data_svc
    from app.services.projects.projects import new_project
    from app.services.training import retrain_jobs
    from app.serving.state import ServingState
    from storage.tables import ModelVersion

    def live(state: Any, name: str) -> Any:  # the project as its local operator, read now
        return open_project(state.db, name, LOCAL)

    folder = args.data / "banking77"
    with (folder / "train_10shot_seed0.csv").open(encoding="utf-8", newline="") as fh:
        shots = list(csv.DictReader(fh))
    with (folder / "test.csv").open(encoding="utf-8", newline="") as fh:
        tests = list(csv.DictReader(fh))
    rng = random.Random(0)
    rng.shuffle(shots)
    start, rest = shots[: args.train], shots[args.train :]
    work = Path(tempfile.mkdtemp(prefix="version-disk-"))
    state = ServingState.open(load_settings(work / "data"))
    state.training.enqueue = worker.queue_for(state.settings)
    new_project(state.db, "disk", base_encoder="minilm")
    for r in start:
        data_svc.add_utterance(
            state.db, live(state, "disk"), r["text"], r["label"], "train", create=True
        )
    for r in rng.sample(tests, args.test):
        data_svc.add_utterance(
            state.db, live(state, "disk"), r["text"], r["label"], "test", create=True
        )
    artifacts = work / "data" / "artifacts"
    from app.services.training.base_int8 import ensure_base_int8

    ensure_base_int8(state.live, live(state, "disk"))  # as a worker's warm-up builds it
    rows: list[dict[str, Any]] = []
    try:
        for n in range(args.retrains):
            if n:
                for r in rest[(n - 1) * args.labels : n * args.labels]:
                    data_svc.add_utterance(
                        state.db, live(state, "disk"), r["text"], r["label"], "train"
                    )
            began = time.perf_counter()
            view, _ = retrain_jobs.request_retrain(
                state.training, live(state, "disk"), {}, enqueue=False, trigger="auto"
            )
            worker.execute_job(state, view.id)
            done = retrain_jobs.job(state.training, view.id)
            with state.db.session() as s:
                mv = s.get(ModelVersion, done.model_version_id) if done.model_version_id else None
                kept = (  # a version whose files the retention rule removed keeps its path, says why
                    s.query(ModelVersion).filter(ModelVersion.files_removed.is_(None)).count()
                )
                versions = s.query(ModelVersion).count()
                own = folder_bytes(artifacts / mv.artifact_path) if mv and mv.artifact_path else 0
                int8 = (mv.metrics or {}).get("int8", {}) if mv else {}
                copy = folder_bytes(artifacts / int8["artifact"]) if int8.get("artifact") else 0
            row = {
                "retrain": n + 1,
                "status": done.status,
                "version": done.model_version_id,
                "served": bool(mv is not None and (mv.metrics or {}).get("gate", {}).get("passed")),
                "version_mb": round(own / 1e6, 2),
                "int8_mb": round(copy / 1e6, 2),
                "int8": int8.get("reason", ""),
                "project_mb": round(folder_bytes(artifacts / "projects") / 1e6, 1),
                "versions_with_files": kept,
                "versions": versions,
                "seconds": round(time.perf_counter() - began, 1),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        base_mb = folder_bytes(artifacts / "base") / 1e6
        state.close()
    sizes = [r["version_mb"] + r["int8_mb"] for r in rows if r["version_mb"]]
    print(
        f"\nper version (artifact + int8 copy), MB: median {statistics.median(sizes):.1f}, max "
        f"{max(sizes):.1f}; the project's versions after {len(rows)} retrains: "
        f"{rows[-1]['project_mb']:.1f} MB ({rows[-1]['versions_with_files']} of "
        f"{rows[-1]['versions']} versions keep files); the base encoder's shared int8 copy "
        f"{base_mb:.1f} MB (once per data directory)"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"rows": rows, "base_int8_mb": base_mb, "args": vars(args)}, default=str)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
