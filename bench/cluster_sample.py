"""How large a sample candidate intents should cluster (issue 72 item 3): on a log-dump project's
unlabelled rows (:mod:`bench.dump_data`, vectors from a data directory ``bench.sizes`` seeded),
:func:`core.design.find_clusters` with HDBSCAN's sample (``core.design.clusters.SAMPLE``) at each
size asked, the other rows joined to the nearest group: the seconds, the groups, the rows they
hold (coverage) and how well they agree with the rows' source intents (NMI and ARI over the rows
in a group; the source is the public set's intent, a variation its base's), one run per sample.
A sample as large as the rows is HDBSCAN over every row (what the app did below 20,000 rows).

Usage:
    nice -n 10 .venv/bin/python -m bench.cluster_sample --size 60000 --samples 10000,20000,60000
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import dump_data
from bench._checkouts import load_average

ROOT = Path(__file__).resolve().parents[1]


class Cached:
    """What the embedding cache asks of an encoder, for vectors it holds already."""

    name = "minilm"

    def __init__(self, fingerprint: str) -> None:
        self.fingerprint = fingerprint

    @property
    def dim(self) -> int:
        return 384

    def encode(self, texts: Any, *, progress: Any = None) -> np.ndarray:
        raise RuntimeError(f"{len(texts)} texts are not in the cache: run bench.sizes first")


def main(argv: list[str] | None = None) -> int:
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

    from core.design import clusters
    from core.encoding.cache import EmbeddingCache

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=dump_data.DEFAULT_DATA)
    ap.add_argument("--size", type=int, default=60_000)
    ap.add_argument("--samples", default="10000,20000,60000")
    ap.add_argument("--work", type=Path, default=ROOT / "bench" / "results" / "sizes")
    ap.add_argument("--fingerprint", default="minilm@c9332c31b66c62f2")
    args = ap.parse_args(argv)
    rows = [r for r in dump_data.build(args.data, args.size) if r.split == "unlabelled"]
    cache = EmbeddingCache(args.work / f"data-{args.size}" / "cache")
    vectors = cache.encode(Cached(args.fingerprint), [r.text for r in rows])
    texts = [r.text for r in rows]
    source = np.array([f"{r.origin.split('+')[0]}/{r.source}" for r in rows])
    out = []
    for sample in (int(s) for s in args.samples.split(",")):
        clusters.SAMPLE = sample
        load = load_average()
        began = time.perf_counter()
        found = clusters.find_clusters(vectors, texts)
        seconds = time.perf_counter() - began
        group = np.full(len(rows), -1)
        for c in found:
            group[list(c.members)] = c.number
        kept = group >= 0
        out.append(
            {
                "rows": len(rows),
                "sample": min(sample, len(rows)),
                "seconds": round(seconds, 1),
                "groups": len(found),
                "coverage": round(float(kept.mean()), 3),
                "nmi": round(float(normalized_mutual_info_score(source[kept], group[kept])), 3),
                "ari": round(float(adjusted_rand_score(source[kept], group[kept])), 3),
                "load": load,
            }
        )
        print(out[-1], flush=True)
    cols = ["rows", "sample", "seconds", "groups", "coverage", "nmi", "ari", "load"]
    print("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
    for r in out:
        print("| " + " | ".join(str(r[c]) for c in cols) + " |")
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
