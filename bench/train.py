"""Benchmark of the specialisation methods: accuracy and training time per cell, median over seeds.

Reads ``<data>/<dataset>/train_10shot_seed<N>.csv`` and ``test.csv`` (``text,label``) and scores
1-NN over the shots (ConvFiT's few-shot protocol). Methods:

- ``frozen``: the base encoder, 1-NN.        - ``frozen_lr``: logistic regression on frozen vectors.
- ``convfit``: ConvFiT Stage 2 as in the paper (OCL, n=3, 10 epochs; ``--convfit-epochs``).
- ``convfit_budget``: the same recipe at the fast default's step budget.
- ``fast``: the CPU default.                 - ``lora``: the fast recipe on LoRA adapters only.
- ``fast_freeze3``: the fast default with the lowest 3 of MiniLM's 6 layers frozen (shorter steps).
- ``setfit`` / ``setfit_equal``: SetFit 1.2 at its defaults / at the fast default's wall time.
- ``mpnet_fast``: the fast default on all-mpnet-base-v2.

Usage:
    python -m bench.train --datasets banking77 --seeds 0 --methods frozen,fast,lora
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.csvdata import read_csv  # noqa: E402  (needs ROOT on the path)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

logger = logging.getLogger("bench.train")

ALL_METHODS = [
    "frozen",
    "frozen_lr",
    "convfit",
    "convfit_budget",
    "fast",
    "fast_freeze3",
    "lora",
    "setfit",
    "setfit_equal",
    "mpnet_fast",
]


class Cell:
    """Times a method (wall and process CPU seconds)."""

    def __init__(self) -> None:
        self.wall = time.monotonic()
        self.cpu = time.process_time()

    def done(self) -> tuple[float, float]:
        return time.monotonic() - self.wall, time.process_time() - self.cpu


_FROZEN: dict[tuple[str, int], np.ndarray] = {}


def frozen_vectors(enc: Any, texts: list[str]) -> np.ndarray:
    """Frozen-encoder vectors, computed once per process (shared by frozen and frozen_lr)."""
    key = (enc.fingerprint, hash(tuple(texts)))
    if key not in _FROZEN:
        _FROZEN[key] = enc.encode(texts, batch_size=128)
    return _FROZEN[key]


def one_nn(enc: Any, tr_x: list[str], tr_y: list[str], te_x: list[str], te_y: list[str]) -> float:
    from core.evaluation.scoring import knn_predict

    pred = knn_predict(enc.encode(tr_x, batch_size=128), tr_y, enc.encode(te_x, batch_size=128))
    return float(np.mean(np.asarray(pred) == np.asarray(te_y)))


def run_cell(
    method: str, tr_x: list[str], tr_y: list[str], te_x: list[str], te_y: list[str], args: Any
) -> dict[str, Any]:
    from core.encoding.registry import load_encoder
    from core.training import TrainConfig, train_encoder

    labels = [(y,) for y in tr_y]
    seed = args.train_seed
    if method in ("frozen", "frozen_lr"):
        enc = load_encoder(args.encoder, device=args.device)
        cell = Cell()
        train_vecs, test_vecs = frozen_vectors(enc, tr_x), frozen_vectors(enc, te_x)
        if method == "frozen":
            from core.evaluation.scoring import knn_predict

            wall, cpu = cell.done()
            pred = knn_predict(train_vecs, tr_y, test_vecs)
            acc = float(np.mean(np.asarray(pred) == np.asarray(te_y)))
            return {"acc": acc, "train_s": wall, "cpu_s": cpu}
        from sklearn.linear_model import LogisticRegression

        cell = Cell()
        clf = LogisticRegression(max_iter=2000, C=10.0)
        clf.fit(train_vecs, tr_y)
        wall, cpu = cell.done()
        acc = float(np.mean(clf.predict(test_vecs) == np.asarray(te_y)))
        return {"acc": acc, "train_s": wall, "cpu_s": cpu}
    if method.startswith("setfit"):
        return run_setfit(method, tr_x, tr_y, te_x, te_y, args)
    base = "mpnet" if method.startswith("mpnet") else args.encoder
    if base == "mpnet":
        import core.encoding.mpnet  # noqa: F401  (registers the encoder)
    if method in ("fast", "mpnet_fast"):
        cfg = TrainConfig(seed=seed)
    elif method == "fast_freeze3":
        cfg = TrainConfig(seed=seed, freeze_layers=3)
    elif method == "lora":
        cfg = TrainConfig(method="lora", seed=seed)
    elif method == "convfit":
        cfg = TrainConfig(
            method="convfit", loss="ocl", negatives=3, seed=seed, epochs=args.convfit_epochs
        )
    elif method == "convfit_budget":
        steps = args.fast_steps or 100
        cfg = TrainConfig(
            method="convfit", loss="ocl", negatives=3, seed=seed, epochs=1, max_pairs=steps * 32
        )
    else:
        raise ValueError(f"unknown method {method}")
    cell = Cell()
    trained = train_encoder(base, tr_x, labels, cfg, device=args.device)
    wall, cpu = cell.done()
    acc = one_nn(trained.encoder(), tr_x, tr_y, te_x, te_y)
    if method == "fast":
        args.fast_steps = trained.stats["steps"]
        args.fast_wall = wall
    return {"acc": acc, "train_s": wall, "cpu_s": cpu, "steps": trained.stats["steps"]}


def run_setfit(
    method: str, tr_x: list[str], tr_y: list[str], te_x: list[str], te_y: list[str], args: Any
) -> dict[str, Any]:
    try:
        from datasets import Dataset
        from setfit import SetFitModel, Trainer, TrainingArguments
    except ImportError:
        return {"error": "setfit is not installed (pip install setfit)"}
    from core.encoding.registry import resolve_path

    model = SetFitModel.from_pretrained(str(resolve_path(args.encoder)), local_files_only=True)
    kwargs: dict[str, Any] = {"seed": args.train_seed}
    if method == "setfit_equal" and args.fast_wall:
        # one pass over a pair budget sized to the fast default's wall time
        kwargs.update(num_epochs=1, max_steps=max(1, int(args.fast_steps or 100)))
    train = Dataset.from_dict({"text": tr_x, "label": tr_y})
    with tempfile.TemporaryDirectory(
        prefix="setfit-"
    ) as tmp:  # its checkpoints stay out of the tree
        kwargs["output_dir"] = tmp
        trainer = Trainer(model=model, args=TrainingArguments(**kwargs), train_dataset=train)
        cell = Cell()
        trainer.train()
        wall, cpu = cell.done()
    pred = model.predict(te_x)
    acc = float(np.mean(np.asarray([str(p) for p in pred]) == np.asarray(te_y)))
    return {"acc": acc, "train_s": wall, "cpu_s": cpu}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--datasets", default="banking77,clinc150")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--methods", default=",".join(ALL_METHODS))
    ap.add_argument("--shots", type=int, default=10)
    ap.add_argument("--encoder", default="minilm")
    ap.add_argument("--device", default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--convfit-epochs", type=int, default=None)
    ap.add_argument(
        "--test-limit", type=int, default=0, help="score a seeded subset of the test set"
    )
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    import torch

    torch.set_num_threads(args.threads)
    methods = [m for m in args.methods.split(",") if m]
    unknown = sorted(set(methods) - set(ALL_METHODS))
    if unknown:
        ap.error(f"unknown methods: {', '.join(unknown)}")
    if "setfit_equal" in methods and "fast" in methods:
        methods = [m for m in methods if m != "setfit_equal"] + ["setfit_equal"]
    results: list[dict[str, Any]] = []
    for ds in args.datasets.split(","):
        te_x, te_y = read_csv(args.data / ds / "test.csv")
        if args.test_limit:
            idx = np.random.default_rng(0).choice(len(te_x), args.test_limit, replace=False)
            te_x, te_y = [te_x[i] for i in idx], [te_y[i] for i in idx]
        for seed in [int(s) for s in args.seeds.split(",")]:
            tr_x, tr_y = read_csv(args.data / ds / f"train_{args.shots}shot_seed{seed}.csv")
            args.train_seed, args.fast_steps, args.fast_wall = seed, None, None
            for method in methods:
                if method == "mpnet_fast" and ds != "banking77":
                    continue
                logger.info("%s seed %d: %s", ds, seed, method)
                out = run_cell(method, tr_x, tr_y, te_x, te_y, args)
                row = {"dataset": ds, "seed": seed, "method": method, **out}
                logger.info("%s", row)
                results.append(row)
                flush(results, args)
    print(table(results))
    return 0


def summarise(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    cells: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in results:
        if "acc" in r:
            cells.setdefault((r["dataset"], r["method"]), []).append(r)
    out = []
    for (ds, m), rows in cells.items():

        def med(k: str, rows: list[dict[str, Any]] = rows) -> float:
            return float(statistics.median(r[k] for r in rows))

        out.append(
            {
                "dataset": ds,
                "method": m,
                "seeds": [r["seed"] for r in rows],
                "acc_per_seed": [round(100 * r["acc"], 2) for r in rows],
                "acc_median": round(100 * med("acc"), 2),
                "train_s_median": round(med("train_s"), 1),
                "cpu_s_median": round(med("cpu_s"), 1),
            }
        )
    return out


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| dataset | method | seeds | acc % (per seed) | acc % median | train s (wall) | train s (CPU) |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in summarise(results):
        lines.append(
            f"| {s['dataset']} | {s['method']} | {','.join(map(str, s['seeds']))} "
            f"| {' / '.join(f'{a:.1f}' for a in s['acc_per_seed'])} | {s['acc_median']:.1f} "
            f"| {s['train_s_median']:.1f} | {s['cpu_s_median']:.1f} |"
        )
    return "\n".join(lines)


def flush(results: list[dict[str, Any]], args: Any) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    payload = {"results": results, "summary": summarise(results), "threads": args.threads}
    (args.out / "train.json").write_text(json.dumps(payload, indent=2))
    (args.out / "train.md").write_text(table(results) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
