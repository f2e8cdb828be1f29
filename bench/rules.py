"""Benchmark of the decision rules over a labelled pool: which rule turns vectors into an intent.

Reads ``<data>/<dataset>/train_10shot_seed<N>.csv`` and ``test.csv`` (``text,label``). The pool is
the 10 shots per intent (or the first 5 per intent of that file, ``--shots 5``); every rule sees
the same vectors. Encoders: ``frozen`` MiniLM and ``tuned`` (the app's default recipe, the
``fast`` method of bench/train.py, trained on the pool's own shots). Rules:

- ``1nn``: the nearest example's intent (ConvFiT's rule, the app's default until now).
- ``knn-mean k``: an intent's score is the mean similarity of its k nearest examples.
- ``wknn k``: the k nearest examples vote with their similarity.
- ``centroid``: cosine to each intent's prototype (the normalised mean of its examples).
- ``centroid+1nn``: the mean of the two scores above (the app's default, ``nearest+prototype``).
- ``lr``: logistic regression on the pool (``C=10``, as bench/train.py ``frozen_lr``).
- ``lr+1nn``: the mean of the LR probability and the 1-NN scores' softmax (temperature 0.05).

Vectors are cached per (dataset, seed, encoder) under ``--vectors DIR`` (``DIR/<dataset>/
<encoder>-seed<N>.npz``, the layout bench/oos.py reads), so a tuned encoder trains once;
``--encode-only`` only fills that cache (e.g. on a GPU machine, with ``--base`` a model folder).

Usage:
    nice -n 10 python -m bench.rules --datasets banking77,clinc150 --seeds 0 --vectors /tmp/vec
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench._common import offline_models
from bench.csvdata import first_per_intent, read_csv

ROOT = Path(__file__).resolve().parents[1]

offline_models()

from core.retrieval.knn import combine  # noqa: E402

logger = logging.getLogger("bench.rules")

# Extra splits encoded for CLINC150 so bench/oos.py can reuse the same vectors.
OOS_SPLITS = {"val": "val.csv", "val_oos": "val_oos.csv", "test_oos": "test_oos.csv"}


def unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def encode_cell(ds: str, seed: int, encoder: str, data: Path, args: Any) -> dict[str, np.ndarray]:
    """The vectors of one (dataset, seed, encoder), from the cache or computed (and cached)."""
    saved = args.vectors / ds / f"{encoder}-seed{seed}.npz" if args.vectors else None
    if saved is not None and saved.is_file():
        with np.load(saved) as z:
            return {k: z[k] for k in z.files}
    from core.encoding.registry import load_encoder
    from core.training import TrainConfig, train_encoder

    files = {"train": f"train_10shot_seed{seed}.csv", "test": "test.csv"}
    if ds == "clinc150" and encoder != "tuned5":
        files.update(OOS_SPLITS)
    texts = {k: read_csv(data / ds / f)[0] for k, f in files.items()}
    started = time.monotonic()
    if encoder == "frozen":
        enc: Any = load_encoder(args.base, device=args.device)
    elif encoder in ("tuned", "tuned5"):
        tr_x, tr_y = read_csv(data / ds / files["train"])
        if encoder == "tuned5":
            keep = first_per_intent(tr_y, 5)
            tr_x, tr_y = [tr_x[i] for i in keep], [tr_y[i] for i in keep]
        trained = train_encoder(
            args.base, tr_x, [(y,) for y in tr_y], TrainConfig(seed=seed), device=args.device
        )
        enc = trained.encoder()
        logger.info(
            "%s %s seed %d trained in %.0f s", ds, encoder, seed, time.monotonic() - started
        )
    else:
        raise SystemExit(f"unknown encoder {encoder!r}: use frozen, tuned or tuned5")
    vecs = {
        k: np.asarray(enc.encode(v, batch_size=128), dtype=np.float32) for k, v in texts.items()
    }
    logger.info("%s %s seed %d: vectors in %.0f s", ds, encoder, seed, time.monotonic() - started)
    if saved is not None:
        saved.parent.mkdir(parents=True, exist_ok=True)
        # float16 on disk: half the size, the same decisions (the rules normalise in float32)
        half: dict[str, np.ndarray] = {k: v.astype(np.float16) for k, v in vecs.items()}
        np.savez(saved, **half)  # type: ignore[arg-type]  # numpy types allow_pickle as a **kwarg
    return vecs


# ---------------------------------------------------------------- rules: (pool, labels, queries)
Rule = Callable[[np.ndarray, np.ndarray, np.ndarray, int], np.ndarray]


def per_intent_sims(sims: np.ndarray, y: np.ndarray, n_classes: int, k: int) -> np.ndarray:
    """``(n, C)``: the mean of each intent's ``k`` highest similarities."""
    out = np.empty((len(sims), n_classes), dtype=np.float32)
    for c in range(n_classes):
        s = sims[:, y == c]
        kk = min(k, s.shape[1])
        out[:, c] = s.max(axis=1) if kk == 1 else np.sort(s, axis=1)[:, -kk:].mean(axis=1)
    return out


def rule_knn_mean(k: int) -> Rule:
    def rule(pool: np.ndarray, y: np.ndarray, q: np.ndarray, n_classes: int) -> np.ndarray:
        return per_intent_sims(q @ pool.T, y, n_classes, k)

    return rule


def rule_wknn(k: int) -> Rule:
    def rule(pool: np.ndarray, y: np.ndarray, q: np.ndarray, n_classes: int) -> np.ndarray:
        sims = q @ pool.T
        top = np.argsort(-sims, axis=1)[:, :k]
        out = np.zeros((len(q), n_classes), dtype=np.float32)
        rows = np.arange(len(q))[:, None]
        np.add.at(out, (np.broadcast_to(rows, top.shape), y[top]), sims[rows, top])
        return out

    return rule


def centroids(pool: np.ndarray, y: np.ndarray, n_classes: int) -> np.ndarray:
    return unit(np.stack([pool[y == c].mean(axis=0) for c in range(n_classes)]))


def rule_centroid(pool: np.ndarray, y: np.ndarray, q: np.ndarray, n_classes: int) -> np.ndarray:
    return q @ centroids(pool, y, n_classes).T


def rule_centroid_1nn(pool: np.ndarray, y: np.ndarray, q: np.ndarray, n_classes: int) -> np.ndarray:
    # the app's default rule itself (a labelled duplicate decides alone)
    nearest = per_intent_sims(q @ pool.T, y, n_classes, 1)
    return combine(nearest, rule_centroid(pool, y, q, n_classes))


FIT_MS: list[float] = []


def lr_proba(pool: np.ndarray, y: np.ndarray, q: np.ndarray, n_classes: int) -> np.ndarray:
    from sklearn.linear_model import LogisticRegression

    started = time.perf_counter()
    clf = LogisticRegression(max_iter=2000, C=10.0).fit(pool, y)
    FIT_MS.append(1000 * (time.perf_counter() - started))
    out = np.zeros((len(q), n_classes), dtype=np.float32)
    out[:, clf.classes_] = clf.predict_proba(q)
    return out


def softmax(x: np.ndarray, t: float) -> np.ndarray:
    z = x / t
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def rule_lr_1nn(pool: np.ndarray, y: np.ndarray, q: np.ndarray, n_classes: int) -> np.ndarray:
    knn = softmax(per_intent_sims(q @ pool.T, y, n_classes, 1), 0.05)
    return 0.5 * (lr_proba(pool, y, q, n_classes) + knn)


RULES: dict[str, Rule] = {
    "1nn": rule_knn_mean(1),
    "knn-mean 3": rule_knn_mean(3),
    "wknn 3": rule_wknn(3),
    "wknn 5": rule_wknn(5),
    "wknn 10": rule_wknn(10),
    "centroid": rule_centroid,
    "centroid+1nn": rule_centroid_1nn,
    "lr": lr_proba,
    "lr+1nn": rule_lr_1nn,
}


def score_rules(
    vecs: dict[str, np.ndarray],
    tr_y: list[str],
    te_y: list[str],
    keep: list[int],
    rules: list[str],
) -> dict[str, float]:
    names = sorted(set(tr_y))
    col = {n: i for i, n in enumerate(names)}
    y = np.array([col[tr_y[i]] for i in keep])
    gold = np.array([col.get(g, -1) for g in te_y])
    pool, q = unit(vecs["train"][keep]), unit(vecs["test"])
    out = {}
    for name in rules:
        scores = RULES[name](pool, y, q, len(names))
        out[name] = float((scores.argmax(axis=1) == gold).mean())
    return out


def summarise(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    cells: dict[tuple[str, int, str, str], list[dict[str, Any]]] = {}
    for r in results:
        cells.setdefault((r["dataset"], r["shots"], r["encoder"], r["rule"]), []).append(r)
    return [
        {
            "dataset": ds,
            "shots": shots,
            "encoder": enc,
            "rule": rule,
            "seeds": [r["seed"] for r in rows],
            "acc_per_seed": [round(100 * r["acc"], 2) for r in rows],
            "acc_median": round(100 * statistics.median(r["acc"] for r in rows), 2),
        }
        for (ds, shots, enc, rule), rows in cells.items()
    ]


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| dataset | shots | encoder | rule | seeds | acc % (per seed) | acc % median |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in summarise(results):
        lines.append(
            f"| {s['dataset']} | {s['shots']} | {s['encoder']} | {s['rule']} "
            f"| {','.join(map(str, s['seeds']))} "
            f"| {' / '.join(f'{a:.1f}' for a in s['acc_per_seed'])} | {s['acc_median']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--datasets", default="banking77,clinc150")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--encoders", default="frozen,tuned")
    ap.add_argument("--shots", default="10,5")
    ap.add_argument("--rules", default=",".join(RULES))
    ap.add_argument("--base", default="minilm", help="registry name or a model folder")
    ap.add_argument("--device", default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--vectors", type=Path, default=None, help="keep/reuse vectors here")
    ap.add_argument("--encode-only", action="store_true")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    rules = [r for r in args.rules.split(",") if r]
    unknown = sorted(set(rules) - set(RULES))
    if unknown:
        ap.error(f"unknown rules: {', '.join(unknown)} (known: {', '.join(RULES)})")
    if args.device in (None, "cpu"):
        import torch

        torch.set_num_threads(args.threads)
    results: list[dict[str, Any]] = []
    for ds in args.datasets.split(","):
        te_y = read_csv(args.data / ds / "test.csv")[1]
        for seed in [int(s) for s in args.seeds.split(",")]:
            tr_y = read_csv(args.data / ds / f"train_10shot_seed{seed}.csv")[1]
            for encoder in args.encoders.split(","):
                vecs = encode_cell(ds, seed, encoder, args.data, args)
                if args.encode_only:
                    continue
                for shots in [int(s) for s in args.shots.split(",")]:
                    if (encoder == "tuned5") != (shots == 5) and encoder != "frozen":
                        continue  # a tuned encoder is scored on the shots it was trained on
                    keep = first_per_intent(tr_y, shots)
                    accs = score_rules(vecs, tr_y, te_y, keep, rules)
                    for rule, acc in accs.items():
                        row = {"dataset": ds, "seed": seed, "shots": shots, "encoder": encoder}
                        results.append({**row, "rule": rule, "acc": acc})
                    logger.info("%s seed %d %s %d-shot: %s", ds, seed, encoder, shots, accs)
                    flush(results, args)
    if results:
        print(table(results))
    if FIT_MS:
        print(f"LR fit: median {statistics.median(FIT_MS):.0f} ms over {len(FIT_MS)} fits")
    return 0


def flush(results: list[dict[str, Any]], args: Any) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    payload = {
        "results": results,
        "summary": summarise(results),
        "lr_fit_ms": FIT_MS,
        "threads": args.threads,
    }
    (args.out / "rules.json").write_text(json.dumps(payload, indent=2))
    (args.out / "rules.md").write_text(table(results) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
