"""Benchmark: the share of ConvFiT (OCL) batches whose loss is 0, with random and with hard
negatives, in the frozen space and in a tuned one (issue 44: 59 % of ConvFiT's logged steps had
loss 0.000).

The pairs are the recipe's own (:func:`core.training.pairs.sample_pairs`, ``negatives=3``,
seed 0) on a 10-shot training file; each batch of 32 (shuffled as training shuffles an epoch)
gets the online contrastive loss of sentence-transformers (cosine distance, margin 0.5) computed
in numpy from fixed vectors: 0 when every positive pair is closer than every negative pair and no
negative is within the margin. Hard negatives: for each side of each positive pair, 3 drawn from
its 10 nearest examples of other intents in the frozen space. ``--tuned`` takes a trained
version's folder (e.g. ``<data dir>/artifacts/projects/1/models/job1-...``) for the second space.

Usage:
    python -m bench.ocl_idle --tuned /tmp/jpw/data-.../artifacts/projects/1/models/job1-xxxx
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import numpy as np

from bench.csvdata import read_csv
from core.training.pairs import Pair, positive_pairs, sample_pairs

ROOT = Path(__file__).resolve().parents[1]


def idle_share(pairs: list[Pair], v: np.ndarray, margin: float = 0.5, batch: int = 32) -> float:
    """The share of batches whose OCL loss is exactly 0 in the space of ``v``."""
    order = list(pairs)
    random.Random(0).shuffle(order)
    idle = n = 0
    for start in range(0, len(order), batch):
        part = order[start : start + batch]
        d = np.array([1.0 - float(v[p.i] @ v[p.j]) for p in part])
        y = np.array([p.label for p in part])
        pos, neg = d[y == 1], d[y == 0]
        hard_neg = neg[neg < (pos.max() if len(pos) else neg.mean())]
        hard_pos = pos[pos > (neg.min() if len(neg) else pos.mean())]
        loss = (hard_pos**2).sum() + (np.maximum(0.0, margin - hard_neg) ** 2).sum()
        idle += bool(loss == 0)
        n += 1
    return idle / max(n, 1)


def hard_pairs(
    texts: list[str], labels: list[tuple[str, ...]], v: np.ndarray, near: int = 10, per: int = 3
) -> list[Pair]:
    """The recipe's positives, each side with ``per`` negatives among its ``near`` nearest
    examples of other intents in the space of ``v``."""
    rng = random.Random(0)
    sims = v @ v.T
    closest = [
        [int(j) for j in np.argsort(-sims[i]) if labels[j] != labels[i]][:near]
        for i in range(len(texts))
    ]
    out = []
    for i, j in positive_pairs(labels):
        out.append(Pair(i, j, texts[i], texts[j], 1))
        for _ in range(per):
            a, b = rng.choice(closest[i]), rng.choice(closest[j])
            out.append(Pair(i, a, texts[i], texts[a], 0))
            out.append(Pair(b, j, texts[b], texts[j], 0))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--train", default="banking77/train_10shot_seed0.csv")
    ap.add_argument("--tuned", type=Path, default=None, help="a trained version's folder")
    args = ap.parse_args(argv)
    from core.encoding.registry import load_encoder
    from core.training import load_trained

    texts, names = read_csv(args.data / args.train)
    labels: list[tuple[str, ...]] = [(name,) for name in names]
    spaces = {"frozen": load_encoder("minilm").encode(texts)}
    if args.tuned is not None:
        spaces["tuned"] = load_trained(args.tuned).encode(texts)
    randoms = sample_pairs(texts, labels, 0, negatives=3)
    hard = hard_pairs(texts, labels, spaces["frozen"])
    print(f"{len(randoms):,} pairs a pass ({sum(p.label for p in randoms):,} positive)")
    for name, v in spaces.items():
        print(
            f"{name:8s} random negatives: {idle_share(randoms, v):.1%} of batches at loss 0; "
            f"hard negatives: {idle_share(hard, v):.1%}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
