"""Where a retrain's evaluation time goes: BANKING77 10-shot pool (770) and its test split (3,080),
timed part by part for the three encoders a retrain scores (the new model, the frozen base, the
active version).

    python -m bench.evaluate --data ../shared/data/banking77 --train train_10shot_seed0.csv

The "new model" is the frozen base saved as a retrain artifact and loaded back: same cost as a
tuned one (same architecture), a fingerprint of its own (so a cold cache). Prints a table and a
JSON line (also written to bench/results/evaluate.json).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

TARGET_S = 10.0  # per encoder, 3k test utterances, 2 CPU cores


def read_csv(path: Path) -> tuple[list[str], list[tuple[str, ...]]]:
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return [r["text"] for r in rows], [(r["label"],) for r in rows]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t = time.perf_counter()
    out = fn()
    return round(time.perf_counter() - t, 2), out


class _Reporter:
    """Keeps the evaluation phase's reports with the time they came."""

    handing_back = False

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.reports: list[tuple[float, int, int, float | None]] = []

    def evaluation(self, p: Any) -> None:
        self.reports.append((time.perf_counter() - self.t0, p.done, p.total, p.eta))

    def should_cancel(self) -> bool:
        return False

    def log(self, line: str, *, phase: str | None = None) -> None: ...

    def plan(self, plan: Any) -> None: ...

    def progress(self, p: Any) -> None: ...

    def vectors(self, done: int, total: int, eta: float | None) -> None: ...


def _phase(args: Any, root: Path, base: Any, active: Any, data: Any) -> dict[str, Any]:
    """A later retrain's evaluation phase through the pipeline (new model cold, frozen base and
    active version from the cache), with its first ETA against the time it really took."""
    try:
        from app.services.training.retrain import Evaluation
    except ImportError:  # before the two-phase progress
        return {}
    from app.config import load_settings
    from app.serving.state import ServingState
    from core.encoding.cache import EmbeddingCache
    from core.encoding.registry import load_sentence_transformer, resolve_path
    from core.retrieval.factory import PredictorFactory
    from core.training import TrainConfig, TrainedModel, load_trained

    ctx = ServingState.open(load_settings(root / "app"))
    ctx.factories.cache = ctx.live.cache = EmbeddingCache(root / "cache")
    art = root / "artifact2"
    art.mkdir()
    model = load_sentence_transformer(resolve_path(args.encoder), args.device)
    TrainedModel(model, args.encoder, TrainConfig(seed=1)).save(art)
    new = load_trained(art, device=args.device)
    reporter = _Reporter()
    t = time.perf_counter()
    factories = [PredictorFactory(enc) for enc in (new, base, active)]
    try:  # the phases take the job's pieces (issue 67), not the process's state
        from app.worker.reporter import retrain_run

        ev = Evaluation(retrain_run(ctx, 0, reporter), data, factories)  # type: ignore[arg-type]
    except ImportError:
        ev = Evaluation(ctx, reporter, data, factories)  # type: ignore[call-arg,arg-type]
    ev.start()
    for factory in factories:
        ev.score(factory)
    took = time.perf_counter() - t
    ctx.close()
    first = next((r for r in reporter.reports if r[3] is not None and r[1] < r[2]), None)
    out: dict[str, Any] = {"phase_later_pipeline_s": round(took, 2), "phase_to_encode": ev.total}
    if first is not None:
        real_left, eta = took - first[0], float(first[3] or 0.0)
        out["phase_first_eta_s"] = round(eta, 1)
        out["phase_first_eta_real_left_s"] = round(real_left, 1)
        out["phase_first_eta_ratio"] = round(eta / real_left, 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "banking77")
    ap.add_argument("--train", default="train_10shot_seed0.csv")
    ap.add_argument("--test", default="test.csv")
    ap.add_argument("--encoder", default="minilm")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()

    import torch

    from app.services.models.evaluation import evaluate_version
    from core.encoding.cache import EmbeddingCache
    from core.encoding.registry import load_encoder, load_sentence_transformer, resolve_path
    from core.evaluation import EvalData, evaluate_knn
    from core.retrieval.factory import PredictorFactory, vector_pool
    from core.training import TrainConfig, TrainedModel, load_trained

    train_x, train_y = read_csv(args.data / args.train)
    test_x, test_y = read_csv(args.data / args.test)
    data = EvalData(train_x, train_y, test_x, test_y)
    n = len(train_x) + len(test_x)
    res: dict[str, Any] = {
        "train": len(train_x),
        "test": len(test_x),
        "threads": torch.get_num_threads(),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }
    base = load_encoder(args.encoder, device=args.device)
    base.encode(train_x[:64])  # warm-up: first-call allocations are not the evaluation's cost

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        # the new model: saved and loaded back the way the retrain does it
        art = root / "artifact"
        art.mkdir()
        model = load_sentence_transformer(resolve_path(args.encoder), args.device)
        res["save_new_s"], _ = timed(
            lambda: TrainedModel(model, args.encoder, TrainConfig()).save(art)
        )
        res["load_new_s"], new = timed(lambda: load_trained(art, device=args.device))

        res["encode_raw_test_s"], _ = timed(lambda: base.encode(test_x))
        res["encode_utt_per_s"] = round(len(test_x) / max(res["encode_raw_test_s"], 1e-9), 1)

        cache = EmbeddingCache(root / "cache")
        new_f, base_f = PredictorFactory(new), PredictorFactory(base)
        res["eval_new_cold_s"], _ = timed(lambda: evaluate_version(new_f, data, cache))
        res["eval_base_cold_s"], _ = timed(lambda: evaluate_version(base_f, data, cache))
        res["eval_base_warm_s"], _ = timed(lambda: evaluate_version(base_f, data, cache))
        disk = EmbeddingCache(root / "cache")  # a restarted worker: vectors from the disk cache
        res["eval_active_disk_s"], _ = timed(lambda: evaluate_version(new_f, data, disk))
        train_v = cache.encode(base, train_x)
        test_v = cache.encode(base, test_x)
        res["score_only_s"], metrics = timed(
            lambda: evaluate_knn(vector_pool(train_v, train_y), test_v, test_y)
        )
        res["accuracy_base"] = round(float(metrics["accuracy"]), 4)
        # the retrain's evaluation phase: new (cold) + base + active, as a first retrain sees it
        # (base cold) and as a later one sees it (base and active cached)
        res["phase_first_retrain_s"] = round(res["eval_new_cold_s"] + res["eval_base_cold_s"], 2)
        res["phase_later_retrain_s"] = round(
            res["eval_new_cold_s"] + res["eval_base_warm_s"] + res["eval_active_disk_s"], 2
        )
        res["utterances_per_encoder"] = n
        phase = _phase(args, root, base, new, data)  # the pipeline's phase, where it exists
        if phase:
            res.update(phase)

    marks = {"eval_new_cold_s": TARGET_S, "eval_base_cold_s": TARGET_S}
    print(f"{'part':26} {'value':>10}  target")
    for key, value in res.items():
        mark = ""
        if key in marks:
            mark = f"≤ {marks[key]:.0f} s  {'met' if value <= marks[key] else 'MISSED'}"
        print(f"{key:26} {value!s:>10}  {mark}")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "evaluate.json").write_text(json.dumps(res, indent=2))
    print(json.dumps(res))


if __name__ == "__main__":
    main()
