"""Distillation from mpnet into MiniLM on the unlabelled utterances (issue 15, item 4): does it win?

Protocol (the semi-supervised one of ``bench/selftrain.py``: the rest of ``train.csv`` stands in
for a project's unlabelled logs; its labels only score the pseudo-labels of step 4):

1. per seed, the teacher, frozen all-mpnet-base-v2, encodes the shots S and the unlabelled pool
   U = ``train.csv`` minus S (``--pool N``: a seeded sample of N of them, for slow machines),
   once: cached as ``.npy`` under ``--cache``, keyed by data set, seed and a hash of the texts;
   ``test.csv`` too with ``--teacher-row``, for the teacher's own 1-NN accuracy;
2. ``fast``: the default recipe on the 10-shot file S, 1-NN over S on ``test.csv``;
3. ``distil w``: the same recipe plus ``w`` × relational distillation
   (:func:`core.training.losses.similarity_distillation`) over each step's anchors and
   ``--per-step`` utterances drawn from U, scored the same way;
4. with ``--selftrain M``, the teacher as a pseudo-label filter: the ``fast`` model gives each
   intent its ``M`` surest utterances of U (:func:`bench.experiments.pseudo_labels.pseudo_labels`), only
   those frozen mpnet's 1-NN over S agrees with are kept, and the recipe retrains on S plus them
   (``--selftrain-control``: also without the filter); training time counts both passes.

Reports accuracy (the app's k-NN rule) and training seconds per row, median over seeds.

Usage:
    nice -n 10 python -m bench.distil --dataset banking77 --weights 1 --seeds 0 --threads 2
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import sys
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


def teacher_vectors(texts: list[str], name: str, cache: Path, device: str | None) -> np.ndarray:
    """Frozen mpnet vectors of ``texts``, from ``cache/<name>-mpnet-<hash>.npy`` when there."""
    key = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:12]
    path = cache / f"{name}-mpnet-{key}.npy"
    if path.exists():
        return np.load(path)
    import core.encoding.mpnet  # noqa: F401  (fails plainly when mpnet is not installed)
    from core.encoding.registry import load_encoder

    started = time.monotonic()
    vecs = load_encoder("mpnet", device=device).encode(texts, batch_size=64)
    print(f"teacher: {len(texts)} {name} texts in {time.monotonic() - started:.0f} s", flush=True)
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, vecs)
    return vecs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--dataset", default="banking77")
    ap.add_argument("--shots", default="10shot")
    ap.add_argument("--weights", default="1", help="distillation weights, comma-separated")
    ap.add_argument("--loss", default="kl", choices=["kl", "mse"])
    ap.add_argument("--temperature", type=float, default=0.05)
    ap.add_argument("--per-step", type=int, default=32, help="unlabelled utterances per step")
    ap.add_argument(
        "--pool", type=int, default=None, help="a seeded sample of this many unlabelled ones"
    )
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--no-baseline", action="store_true", help="skip the fast rows")
    ap.add_argument("--teacher-row", action="store_true", help="also score frozen mpnet 1-NN")
    ap.add_argument(
        "--selftrain",
        type=int,
        default=0,
        help="also self-train with M pseudo-labels per intent, kept where frozen mpnet agrees",
    )
    ap.add_argument("--selftrain-control", action="store_true", help="and without the mpnet filter")
    ap.add_argument("--device", default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cache", type=Path, default=Path("/tmp/intent-studio-distil"))
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "distil.json")
    args = ap.parse_args(argv)
    import torch

    from bench.experiments.pseudo_labels import pseudo_labels
    from core.encoding.registry import Encoder, load_encoder
    from core.evaluation.scoring import knn_predict
    from core.retrieval.factory import vector_pool
    from core.training import TrainConfig, train_encoder

    torch.set_num_threads(args.threads)
    te_x, te_y = read_csv(args.data / args.dataset / "test.csv")
    all_x, all_y = read_csv(args.data / args.dataset / "train.csv")
    gold = dict(zip(all_x, all_y, strict=True))  # scores the pseudo-labels, nothing else

    def accuracy(enc: Encoder, px: list[str], py: list[str]) -> float:
        pool = vector_pool(enc.encode(px, batch_size=128), py)
        pred = knn_predict(pool, enc.encode(te_x, batch_size=128))
        return float(np.mean(np.asarray(pred) == np.asarray(te_y)))

    load_encoder("minilm", device=args.device)  # warm the file cache: the first row is not slower
    rows: list[dict[str, Any]] = []

    def record(row: dict[str, Any]) -> None:
        rows.append(row)
        print(json.dumps(row), flush=True)

    test_teacher = None
    if args.teacher_row:
        test_teacher = teacher_vectors(te_x, f"{args.dataset}-test", args.cache, args.device)
    weights = [float(w) for w in args.weights.split(",") if w]
    for seed in (int(s) for s in args.seeds.split(",")):
        sx, sy = read_csv(args.data / args.dataset / f"train_{args.shots}_seed{seed}.csv")
        shots = set(sx)
        ux = list(dict.fromkeys(t for t in all_x if t not in shots))
        if args.pool is not None and args.pool < len(ux):  # a seeded sample, in file order
            ux = [ux[i] for i in sorted(random.Random(seed).sample(range(len(ux)), args.pool))]
        name = f"{args.dataset}-{args.shots}-seed{seed}-pool{args.pool or 'all'}"
        vecs = teacher_vectors(sx + ux, name, args.cache, args.device)
        teacher = dict(zip(sx + ux, vecs, strict=True))
        if test_teacher is not None:
            pred = knn_predict(vector_pool(np.stack([teacher[t] for t in sx]), sy), test_teacher)
            acc = float(np.mean(np.asarray(pred) == np.asarray(te_y)))
            record({"seed": seed, "method": "frozen mpnet (teacher)", "acc": acc, "train_s": 0.0})
        configs = (
            [] if args.no_baseline and not args.selftrain else [("fast", TrainConfig(seed=seed))]
        )
        for w in weights:
            cfg = TrainConfig(
                seed=seed,
                distil_weight=w,
                distil_batch=args.per_step,
                distil_loss=args.loss,
                distil_temperature=args.temperature,
            )
            configs.append((f"fast + distil {args.loss} w={w:g}", cfg))
        first = None
        for name, cfg in configs:
            trained = train_encoder(
                "minilm",
                sx,
                [(y,) for y in sy],
                cfg,
                device=args.device,
                teacher=teacher,
                unlabelled=ux,
            )
            if name == "fast":
                first = trained
            acc = accuracy(trained.encoder(), sx, sy)
            record(
                {
                    "seed": seed,
                    "method": name,
                    "acc": acc,
                    "train_s": trained.stats["seconds"],
                    "steps": trained.stats["steps"],
                    "loss": trained.stats["loss"],
                }
            )
        if args.selftrain and first is not None:
            enc = first.encoder()
            pool_vecs, u_vecs = enc.encode(sx, batch_size=128), enc.encode(ux, batch_size=128)
            chosen = pseudo_labels(pool_vecs, sy, u_vecs, args.selftrain)
            # The teacher's own 1-NN over the shots, for the agreement filter.
            says = knn_predict(
                np.stack([teacher[t] for t in sx]),
                sy,
                np.stack([teacher[ux[j]] for j, _ in chosen]),
            )
            variants = [
                ("mpnet agrees", [c for c, t in zip(chosen, says, strict=True) if c[1] == t])
            ]
            if args.selftrain_control:
                variants.append(("MiniLM only", chosen))
            for what, kept in variants:
                px, py = [ux[j] for j, _ in kept], [lab for _, lab in kept]
                second = train_encoder(
                    "minilm",
                    sx + px,
                    [(y,) for y in sy + py],
                    TrainConfig(seed=seed),
                    device=args.device,
                )
                record(
                    {
                        "seed": seed,
                        "method": f"self-train m={args.selftrain}, {what}",
                        "acc": accuracy(second.encoder(), sx, sy),
                        "train_s": first.stats["seconds"] + second.stats["seconds"],
                        "pseudo": len(px),
                        "pseudo_precision": float(
                            np.mean([gold[t] == y for t, y in zip(px, py, strict=True)])
                        ),
                    }
                )
    print(f"\n{args.dataset} {args.shots}, median over seeds {args.seeds} ({args.threads} threads)")
    print(f"{'method':<28} {'seeds':>5} {'acc':>7} {'train s':>8}")
    summary = []
    for name in dict.fromkeys(r["method"] for r in rows):
        mine = [r for r in rows if r["method"] == name]
        line = {
            "method": name,
            "seeds": len(mine),
            "acc": statistics.median(r["acc"] for r in mine),
            "train_s": statistics.median(r["train_s"] for r in mine),
        }
        summary.append(line)
        print(f"{name:<28} {line['seeds']:>5} {line['acc']:>7.4f} {line['train_s']:>8.1f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"args": vars(args), "rows": rows, "summary": summary}, indent=1, default=str)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
