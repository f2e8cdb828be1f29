"""Time 2D projections of N utterances (default 10,000 BANKING77 utterances embedded with MiniLM).

UMAP is warmed up first (numba compilation, as the app does at start-up in the background), so the
numbers are what a user waits for. Embeddings can be cached on disk between runs (``--cache``).

Usage:
    .venv/bin/python -m bench.maps                      # umap + pca on 10k, prints table + JSON
    .venv/bin/python -m bench.maps --n 3000 --methods umap,tsne,pca --json out.json
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data"

logger = logging.getLogger(__name__)


def load_texts(data_dir: Path, n: int) -> tuple[list[str], list[str]]:
    """The first ``n`` utterances of BANKING77 train then test, with their intents."""
    import pandas as pd

    frames = [pd.read_csv(data_dir / "banking77" / f"{split}.csv") for split in ("train", "test")]
    df = pd.concat(frames, ignore_index=True).iloc[:n]
    return df["text"].astype(str).tolist(), df["label"].astype(str).tolist()


def embed(texts: list[str], cache: Path | None) -> np.ndarray:
    from core.encoding.cache import EmbeddingCache
    from core.encoding.registry import load_encoder

    encoder = load_encoder("minilm", device="cpu")
    start = time.perf_counter()
    if cache is not None:
        vectors = EmbeddingCache(cache).encode(encoder, texts)
    else:
        vectors = encoder.encode(texts, batch_size=128)
    logger.info("embedded %d texts in %.1fs", len(texts), time.perf_counter() - start)
    return np.asarray(vectors, dtype=np.float32)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    parser.add_argument("--n", type=int, default=10_000, help="number of utterances")
    parser.add_argument("--methods", default="umap,pca", help="comma-separated: umap,tsne,pca")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", type=Path, default=None, help="embedding cache folder")
    parser.add_argument("--vectors", type=Path, default=None, help="a .npy of vectors to use")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

    from core.evaluation.space import space_metrics
    from core.projection import project, warm_up

    texts, labels = load_texts(args.data, args.n)
    if args.vectors is not None:
        vectors = np.load(args.vectors)[: len(texts)]
    else:
        vectors = embed(texts, args.cache)

    warm = warm_up()
    rows: list[dict[str, object]] = []
    for method in [m.strip() for m in args.methods.split(",") if m.strip()]:
        start = time.perf_counter()
        out = project(vectors, method, seed=args.seed)
        seconds = time.perf_counter() - start
        rows.append({"method": method, "n": len(out), "seconds": round(seconds, 2)})
    start = time.perf_counter()
    metrics = space_metrics(vectors, labels)
    metric_seconds = time.perf_counter() - start

    result = {
        "n": len(texts),
        "dim": int(vectors.shape[1]),
        "cpu_count": os.cpu_count(),
        "warm_up_seconds": round(warm, 2),
        "projections": rows,
        "space_metrics": {k: round(v, 4) for k, v in metrics.items()},
        "space_metrics_seconds": round(metric_seconds, 2),
    }
    print(f"{'method':<8}{'n':>8}{'seconds':>10}")
    for row in rows:
        print(f"{row['method']!s:<8}{row['n']!s:>8}{row['seconds']!s:>10}")
    print(f"space metrics: {metric_seconds:.2f}s  (warm-up {warm:.1f}s)")
    text = json.dumps(result, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
