"""Self-training on the unlabelled utterances (issue 15, item 4): does it pay for its training time?

Protocol (the semi-supervised one: the rest of ``train.csv`` stands in for a project's unlabelled
logs, its gold labels used only to score the pseudo-labels):

1. train the default recipe on the 10-shot file S, score test accuracy (1-NN over S);
2. pseudo-label the unlabelled utterances U with that encoder over S — class-balanced: per intent,
   the ``m`` utterances it predicts for that intent with the largest margin over the runner-up;
3. retrain from the base encoder on S plus the pseudo-labels P; score 1-NN over S and over S+P.

Reports accuracy, the pseudo-labels' precision and the training time per ``m``, median over seeds.

Usage:
    python -m bench.selftrain --dataset banking77 --m 10,25,50 --seeds 0,1,2 --device cuda
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench._common import offline_models
from bench.csvdata import read_csv

ROOT = Path(__file__).resolve().parents[1]

offline_models()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--dataset", default="banking77")
    ap.add_argument("--m", default="10,25,50", help="pseudo-labels per intent")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--device", default=None)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "selftrain.json")
    args = ap.parse_args(argv)
    from bench.experiments.pseudo_labels import pseudo_labels
    from core.encoding.registry import Encoder
    from core.evaluation.scoring import knn_predict
    from core.retrieval.factory import vector_pool
    from core.training import TrainConfig, train_encoder

    te_x, te_y = read_csv(args.data / args.dataset / "test.csv")
    all_x, all_y = read_csv(args.data / args.dataset / "train.csv")
    gold = dict(zip(all_x, all_y, strict=True))

    def fit(x: list[str], y: list[str], seed: int) -> tuple[Encoder, float]:
        started = time.monotonic()
        trained = train_encoder(
            "minilm", x, [(v,) for v in y], TrainConfig(seed=seed), device=args.device
        )
        return trained.encoder(), time.monotonic() - started

    def accuracy(enc: Encoder, px: list[str], py: list[str]) -> float:
        pool = vector_pool(enc.encode(px, batch_size=256), py)
        pred = knn_predict(pool, enc.encode(te_x, batch_size=256))
        return float(np.mean(np.asarray(pred) == np.asarray(te_y)))

    rows: list[dict[str, Any]] = []
    for seed in (int(s) for s in args.seeds.split(",")):
        sx, sy = read_csv(args.data / args.dataset / f"train_10shot_seed{seed}.csv")
        shots = set(sx)
        ux = [t for t in all_x if t not in shots]
        enc, train_s = fit(sx, sy, seed)
        rows.append({"seed": seed, "m": 0, "acc_S": accuracy(enc, sx, sy), "train_s": train_s})
        print(json.dumps(rows[-1]), flush=True)
        pool_vecs, u_vecs = enc.encode(sx, batch_size=256), enc.encode(ux, batch_size=256)
        for m in (int(v) for v in args.m.split(",")):
            chosen = pseudo_labels(vector_pool(pool_vecs, sy), u_vecs, m)
            px, py = [ux[j] for j, _ in chosen], [lab for _, lab in chosen]
            enc2, train_s = fit(sx + px, sy + py, seed)
            rows.append(
                {
                    "seed": seed,
                    "m": m,
                    "pseudo": len(px),
                    "pseudo_precision": float(
                        np.mean([gold[t] == y for t, y in zip(px, py, strict=True)])
                    ),
                    "acc_S": accuracy(enc2, sx, sy),
                    "acc_S+P": accuracy(enc2, sx + px, sy + py),
                    "train_s": train_s,
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    print(f"\n{args.dataset}, median over seeds {args.seeds}")
    print(f"{'m':>4} {'pseudo prec':>11} {'acc (pool S)':>12} {'acc (S+P)':>10} {'train s':>8}")
    summary = []
    for m in sorted({r["m"] for r in rows}):
        mine = [r for r in rows if r["m"] == m]

        def med(key: str, rs: list[dict[str, Any]] = mine) -> float:
            vals = [r[key] for r in rs if key in r]
            return statistics.median(vals) if vals else float("nan")

        line = {k: med(k) for k in ("pseudo_precision", "acc_S", "acc_S+P", "train_s")}
        summary.append({"m": m, **line})
        print(
            f"{m:>4} {line['pseudo_precision']:>11.3f} {line['acc_S']:>12.4f} "
            f"{line['acc_S+P']:>10.4f} {line['train_s']:>8.1f}"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rows": rows, "summary": summary}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
