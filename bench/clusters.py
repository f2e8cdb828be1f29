"""Candidate intents on BANKING77: cluster the 3,080 `test.csv` utterances as if unlabelled and
score the clusters against the gold intents (NMI, ARI), with the wall time at 3k and 10k.

The clustering is :func:`core.design.find_clusters`, exactly what the Design tab runs. HDBSCAN
leaves utterances in no dense region out, so three numbers are reported: NMI/ARI on the clustered
utterances (what a designer is shown) with the coverage, and NMI over *all* utterances with the
left-out ones as one more group (the strict number). 10k: train.csv + test.csv when ``--full``
(encoding 13k texts on a busy 2-core machine takes many minutes), else the 3,080 test vectors
repeated and perturbed (Gaussian noise, cosine ≈ 0.93 to the original) up to 10,000. Encoding
time is not in the cluster time (the app's embedding cache holds the vectors).

Usage:
    .venv/bin/python -m bench.clusters                       # frozen MiniLM, table + JSON
    .venv/bin/python -m bench.clusters --tuned v3-model/ --cache /tmp/emb --json out.json
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "bench" / "results"

logger = logging.getLogger(__name__)


def load(data_dir: Path, split: str) -> tuple[list[str], list[str]]:
    import pandas as pd

    df = pd.read_csv(data_dir / "banking77" / f"{split}.csv")
    return df["text"].astype(str).tolist(), df["label"].astype(str).tolist()


def embed(texts: list[str], encoder_path: str | None, cache: Path | None) -> np.ndarray:
    from core.encoding.cache import EmbeddingCache
    from core.encoding.registry import load_encoder

    if encoder_path:
        from core.training import load_trained

        encoder: Any = load_trained(Path(encoder_path), device="cpu")
    else:
        encoder = load_encoder("minilm", device="cpu")
    start = time.perf_counter()
    vectors = EmbeddingCache(cache).encode(encoder, texts)
    logger.info("embedded %d texts in %.1fs", len(texts), time.perf_counter() - start)
    return np.asarray(vectors, dtype=np.float32)


def perturbed(
    vectors: np.ndarray, n: int, seed: int, noise: float = 0.02
) -> tuple[np.ndarray, np.ndarray]:
    """Row indices and vectors: every row once, then random repeats with Gaussian noise."""
    from core.retrieval.knn import normalise

    rng = np.random.default_rng(seed)
    reps = -(-n // len(vectors))
    idx = np.concatenate(
        [np.arange(len(vectors))] + [rng.permutation(len(vectors)) for _ in range(reps)]
    )[:n]
    jitter = rng.normal(0, noise, (n, vectors.shape[1])).astype(np.float32)
    jitter[: len(vectors)] = 0  # the originals stay as they are
    return idx, normalise(vectors[idx] + jitter)


def score(vectors: np.ndarray, texts: list[str], gold: list[str], name: str) -> dict[str, Any]:
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

    from core.design import find_clusters

    start = time.perf_counter()
    clusters = find_clusters(vectors, texts)
    seconds = time.perf_counter() - start
    found = np.full(len(texts), -1)
    for c in clusters:
        found[list(c.members)] = c.number
    kept = found >= 0
    g = np.asarray(gold)
    return {
        "run": name,
        "n": len(texts),
        "seconds": round(seconds, 2),
        "clusters": len(clusters),
        "gold_intents": len(set(gold)),
        "coverage": round(float(kept.mean()), 3),
        "nmi_clustered": round(float(normalized_mutual_info_score(g[kept], found[kept])), 3),
        "ari_clustered": round(float(adjusted_rand_score(g[kept], found[kept])), 3),
        "nmi_all": round(float(normalized_mutual_info_score(g, found)), 3),
        "example": [c.title for c in clusters[:3]],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    parser.add_argument("--tuned", default=None, help="a tuned encoder's folder (default: frozen)")
    parser.add_argument("--cache", type=Path, default=None, help="embedding cache folder")
    parser.add_argument("--full", action="store_true", help="10k from train+test, not perturbed")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=RESULTS / "clusters.json")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    encoder = "tuned" if args.tuned else "frozen"

    texts, gold = load(args.data, "test")
    vectors = embed(texts, args.tuned, args.cache)
    rows = [score(vectors, texts, gold, f"{encoder} test 3k")]
    if args.full:
        more_texts, more_gold = load(args.data, "train")
        more = embed(more_texts, args.tuned, args.cache)
        big_texts = (texts + more_texts)[:10_000]
        big_gold = (gold + more_gold)[:10_000]
        big = np.concatenate([vectors, more])[:10_000]
        rows.append(score(big, big_texts, big_gold, f"{encoder} train+test 10k"))
    else:
        idx, big = perturbed(vectors, 10_000, args.seed)
        rows.append(
            score(
                big,
                [texts[i] for i in idx],
                [gold[i] for i in idx],
                f"{encoder} test 3k perturbed to 10k",
            )
        )

    cols = ["run", "n", "seconds", "clusters", "coverage", "nmi_clustered", "ari_clustered"]
    cols.append("nmi_all")
    print(" | ".join(cols))
    for r in rows:
        print(" | ".join(str(r[c]) for c in cols))
    # The merge what-if on 1,000 labelled utterances (target: 5 s on 2 cores).
    from core.design import merge_whatif

    a, b = sorted(set(gold[:1000]))[:2]
    started = time.perf_counter()
    w = merge_whatif(vectors[:1000], gold[:1000], a, b)
    merge = {"run": f"{encoder} merge what-if", "n": w.n}
    merge["seconds"] = round(time.perf_counter() - started, 2)
    print(f"merge what-if of {a} + {b} on {w.n} labelled: {merge['seconds']} s")
    rows.append(merge)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(rows, indent=2))
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
