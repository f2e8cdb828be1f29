"""Mislabel finding on planted flips: flip a share of BANKING77's 10-shot labels (seeded) to
another intent at random, run the Conflicts view's computation (out-of-fold k-NN probabilities +
cleanlab's ``find_label_issues``) and score the flagged rows against the flips.

    python -m bench.conflicts --data ../shared/data/banking77 --train train_10shot_seed0.csv

"Flagged" are the likely mislabels as the Conflicts view lists them, most likely first, cut at
twice the number of flips: precision = flips among them / flagged, recall = flips found / flips.
Targets: recall >= 80 % at precision >= 60 %. Also shown: precision at the number of flips and
how many flips the near-duplicate and overlap lists name. Prints a table and a JSON line (also
written to bench/results/conflicts.json).
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def read_csv(path: Path) -> tuple[list[str], list[str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return [r["text"] for r in rows], [r["label"] for r in rows]


def flip(labels: list[str], share: float, seed: int) -> tuple[list[str], set[int]]:
    """``labels`` with ``share`` of them (rounded) changed to another intent, and which."""
    rng = random.Random(seed)
    names = sorted(set(labels))
    rows = rng.sample(range(len(labels)), round(share * len(labels)))
    out = list(labels)
    for i in rows:
        out[i] = rng.choice([n for n in names if n != labels[i]])
    return out, set(rows)


def run_once(
    vectors: np.ndarray, labels: list[str], share: float, seed: int, k: int
) -> dict[str, float]:
    from core.design import find_conflicts, label_issues
    from core.retrieval.factory import PredictorFactory

    noisy, flipped = flip(labels, share, seed)
    factory = PredictorFactory.for_vectors(vectors.shape[1], k=k)
    t = time.perf_counter()
    report = find_conflicts(vectors, noisy, factory=factory, seed=seed)
    seconds = time.perf_counter() - t
    ranked = [x.row for x in report.label_issues]
    flagged = ranked[: 2 * len(flipped)]
    hits = len(set(flagged) & flipped)
    at_n = len(set(ranked[: len(flipped)]) & flipped)
    # cleanlab's own cut (its estimate of how many are mislabelled), without the confidence rule
    alone = [x.row for x in label_issues(report.oof, noisy, confident=1.0)][: 2 * len(flipped)]
    alone_hits = len(set(alone) & flipped)
    dup_rows = {r for d in report.duplicates for r in (d.keep, d.change)}
    return {
        "seed": seed,
        "rows": len(labels),
        "flips": len(flipped),
        "flagged": len(flagged),
        "precision": round(100 * hits / max(1, len(flagged)), 1),
        "recall": round(100 * hits / len(flipped), 1),
        "cleanlab_alone_flagged": len(alone),
        "cleanlab_alone_precision": round(100 * alone_hits / max(1, len(alone)), 1),
        "cleanlab_alone_recall": round(100 * alone_hits / len(flipped), 1),
        "precision_at_flips": round(100 * at_n / len(flipped), 1),
        "flips_in_duplicates": len(dup_rows & flipped),
        "overlaps": len(report.overlaps),
        "temperature": round(report.oof.temperature, 3),
        "oof_accuracy": round(
            100
            * sum(p == g for p, g in zip(report.oof.predicted, noisy, strict=True))
            / len(noisy),
            1,
        ),
        "seconds": round(seconds, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "banking77")
    ap.add_argument("--train", default="train_10shot_seed0.csv")
    ap.add_argument("--share", type=float, default=0.05, help="share of labels flipped")
    ap.add_argument("--seeds", default="0,1,2", help="flip seeds (comma-separated)")
    ap.add_argument("--k", type=int, default=1, help="examples per intent in a score")
    ap.add_argument("--encoder", default="minilm")
    args = ap.parse_args()

    from core.encoding.registry import load_encoder

    texts, labels = read_csv(args.data / args.train)
    encoder = load_encoder(args.encoder, device="cpu")
    t = time.perf_counter()
    vectors = encoder.encode(texts)
    encode_s = time.perf_counter() - t
    runs = [run_once(vectors, labels, args.share, int(s), args.k) for s in args.seeds.split(",")]

    cols = list(runs[0])
    print(f"frozen {args.encoder}, {args.train}, {args.share:.0%} flipped, k={args.k}")
    print(f"{'':24}" + "".join(f"{'seed ' + str(r['seed']):>10}" for r in runs))
    for c in cols[1:]:
        print(f"{c:24}" + "".join(f"{r[c]!s:>10}" for r in runs))
    mean = {c: round(sum(float(r[c]) for r in runs) / len(runs), 1) for c in cols if c != "seed"}
    met = mean["recall"] >= 80 and mean["precision"] >= 60
    print(
        f"mean precision {mean['precision']} %, recall {mean['recall']} % "
        f"(target: recall >= 80 % at precision >= 60 %: {'met' if met else 'NOT met'})"
    )
    results = {
        "dataset": f"{args.data.name}/{args.train}",
        "encoder": f"{args.encoder} (frozen)",
        "share": args.share,
        "k": args.k,
        "encode_s": round(encode_s, 2),
        "runs": runs,
        "mean": mean,
        "target_met": met,
    }
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "conflicts.json").write_text(json.dumps(results, indent=2))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
