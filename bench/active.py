"""Active learning on BANKING77: how many labels each labelling-queue order needs to reach the
accuracy that 10 random examples per intent give.

A simulated designer starts a project with 2 labelled examples per intent (seeded) and the rest of
``train.csv`` unlabelled (``--pool-limit``: a seeded subset of it, to fit a small machine), then
labels ``--batch`` utterances per round (the gold label: a perfect designer) in each order:

- ``random``: a seeded shuffle (the baseline);
- ``uncertain``: the smallest margin between the two best intents first
  (:func:`core.labelling.smallest_margin_first`, the queue's "most uncertain");
- ``diverse``: farthest-first from the labelled pool (:func:`core.labelling.farthest_first`);
- ``hybrid``: the smallest margins, spread out (:func:`core.labelling.uncertain_spread_out`);
- ``spread_margin``: the other way round: a farthest-first shortlist, smallest margin first.

The orders are the queue's own functions over the pool rule's margins and nearest-example
similarities (:func:`core.retrieval.factory.vector_pool`'s Predictor, as :func:`app.services.queue.queue.order` asks).
After every round the labelled pool classifies the test questions (k-NN over the current
encoder's vectors, :func:`core.evaluation.scoring.knn_predict`); every ``--retrain-every``
rounds the encoder is retrained from the base on the labels so far with the app's default recipe
(``TrainConfig()``, as ``bench/train.py``'s ``fast``) and everything is re-encoded.

Reference: 10 random examples per intent (``train_10shot_seed<N>.csv``), tuned the same way
(frozen with ``--no-retrain``), scored on the same test questions. Reported: test accuracy against
labels used, and the labels each order needs to reach the reference (% of those 770).

Usage:
    python -m bench.active --no-retrain                          # frozen encoder, minutes
    nice -n 10 python -m bench.active --pool-limit 2000 --test-limit 1000 --rounds 4 \\
        --retrain-every 4 --orders hybrid,random,uncertain --vectors /tmp/active
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench._common import offline_models
from bench.csvdata import read_csv

ROOT = Path(__file__).resolve().parents[1]

offline_models()

from core.evaluation.scoring import knn_predict  # noqa: E402
from core.labelling import (  # noqa: E402
    farthest_first,
    smallest_margin_first,
    uncertain_spread_out,
)
from core.retrieval.factory import vector_pool  # noqa: E402

logger = logging.getLogger("bench.active")

ORDERS = ("random", "uncertain", "diverse", "hybrid", "spread_margin")
START_PER_INTENT = 2


def pool_signals(
    vecs: np.ndarray, labels: list[str], labelled: list[int], cands: list[int]
) -> tuple[np.ndarray, np.ndarray]:
    """Each candidate's margin (top intent minus runner-up) and similarity to its nearest
    labelled example, by the pool rule the queue uses."""
    pool = vector_pool(vecs[labelled], [labels[i] for i in labelled])
    queries = vecs[cands]
    margins = np.array([p.margin for p in pool.rank(queries, show=0, depth=50)])
    nearest = pool.index.search(queries, 1)
    pool_sim = np.array([hits[0].similarity if hits else -1.0 for hits in nearest])
    return margins, pool_sim


def pick(
    how: str,
    vecs: np.ndarray,
    labels: list[str],
    labelled: list[int],
    cands: list[int],
    n: int,
    rng: np.random.Generator,
    shortlist: int,
) -> list[int]:
    """The next ``n`` candidates (positions into the data) in the order ``how``."""
    if how == "random":
        return [cands[i] for i in rng.permutation(len(cands))[:n]]
    margins, pool_sim = pool_signals(vecs, labels, labelled, cands)
    cvecs = vecs[cands]
    if how == "uncertain":
        order = smallest_margin_first(margins)[:n]
    elif how == "diverse":
        order = farthest_first(cvecs, pool_sim, n)
    elif how == "hybrid":
        order = uncertain_spread_out(cvecs, margins, pool_sim, n, shortlist)
    elif how == "spread_margin":
        short = farthest_first(cvecs, pool_sim, n * shortlist)
        order = [short[i] for i in smallest_margin_first(margins[short])[:n]]
    else:
        raise ValueError(f"unknown order {how!r}")
    return [cands[i] for i in order]


def accuracy(
    vecs: np.ndarray, labels: list[str], labelled: list[int], test: np.ndarray, gold: list[str]
) -> float:
    pred = knn_predict(vector_pool(vecs[labelled], [labels[i] for i in labelled]), test)
    return float(np.mean(np.asarray(pred) == np.asarray(gold)))


def run_order(
    how: str,
    texts: list[str],
    labels: list[str],
    start: list[int],
    frozen: np.ndarray,
    test_x: list[str],
    test_y: list[str],
    retrain: Callable[[list[str], list[str]], Any] | None,
    args: Any,
) -> dict[str, Any]:
    """One simulated designer: rounds of labelling in the order ``how``."""
    rng = np.random.default_rng(args.seed)
    n_pool = len(texts)
    vecs, test_vecs = frozen[:n_pool], frozen[n_pool:]
    labelled = list(start)
    started = time.monotonic()
    curve = [
        {
            "labels": len(labelled),
            "acc": accuracy(vecs, labels, labelled, test_vecs, test_y),
            "tuned": False,
        }
    ]
    logger.info("%s: %d labels, acc %.3f", how, len(labelled), curve[-1]["acc"])
    tuned = False
    for rnd in range(1, args.rounds + 1):
        taken = set(labelled)
        cands = [i for i in range(n_pool) if i not in taken]
        labelled += pick(how, vecs, labels, labelled, cands, args.batch, rng, args.shortlist)
        if retrain is not None and rnd % args.retrain_every == 0:
            enc = retrain([texts[i] for i in labelled], [labels[i] for i in labelled])
            # after the last round only the labelled pool and the test questions are needed
            need = list(range(n_pool)) if rnd < args.rounds else labelled
            both = np.asarray(enc.encode([texts[i] for i in need] + test_x, batch_size=128))
            vecs = np.zeros_like(vecs)
            vecs[need], test_vecs, tuned = both[: len(need)], both[len(need) :], True
        acc = accuracy(vecs, labels, labelled, test_vecs, test_y)
        curve.append({"labels": len(labelled), "acc": acc, "tuned": tuned})
        logger.info(
            "%s round %d: %d labels, acc %.3f%s",
            how,
            rnd,
            len(labelled),
            acc,
            " (tuned)" if tuned else "",
        )
    return {"order": how, "curve": curve, "wall_s": round(time.monotonic() - started, 1)}


def labels_to_reach(curve: list[dict[str, Any]], target: float) -> int | None:
    """The fewest labels at which the curve reaches ``target`` (None: never)."""
    return next((p["labels"] for p in curve if p["acc"] >= target), None)


def table(runs: list[dict[str, Any]], ref: float, ref_labels: int) -> str:
    points = [p["labels"] for p in runs[0]["curve"]] if runs else []
    head = f"{'order':14} " + " ".join(f"{n:>6}" for n in points) + "  reach ref  % of ref"
    lines = [
        f"reference (10 random per intent, {ref_labels} labels): {100 * ref:.1f} %",
        head,
        "-" * len(head),
    ]
    for r in runs:
        need = labels_to_reach(r["curve"], ref)
        lines.append(
            f"{r['order']:14} "
            + " ".join(f"{100 * p['acc']:>6.1f}" for p in r["curve"])
            + (
                f"  {need:>9}  {100 * need / ref_labels:>7.0f} %"
                if need
                else f"  {'not yet':>9}  {'-':>7}  "
            )
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "banking77")
    ap.add_argument("--orders", default="random,uncertain,diverse,hybrid")
    ap.add_argument("--seed", type=int, default=0, help="start set, subsets, random order")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--batch", type=int, default=77, help="labels per round")
    ap.add_argument("--shortlist", type=int, default=2, help="hybrid: shortlist = this x batch")
    ap.add_argument("--retrain-every", type=int, default=2, help="rounds between retrains")
    ap.add_argument("--no-retrain", action="store_true", help="frozen encoder only (quick)")
    ap.add_argument("--pool-limit", type=int, default=0, help="unlabelled: a seeded subset")
    ap.add_argument("--test-limit", type=int, default=0, help="score a seeded test subset")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--vectors", type=Path, default=None, help="keep/reuse frozen vectors here")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = ap.parse_args(argv)
    orders = [o for o in args.orders.split(",") if o]
    if unknown := sorted(set(orders) - set(ORDERS)):
        ap.error(f"unknown orders: {', '.join(unknown)} (use {', '.join(ORDERS)})")
    if args.retrain_every < 1:
        ap.error("--retrain-every must be at least 1")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    import torch

    from core.encoding.registry import load_encoder
    from core.training import TrainConfig, train_encoder

    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(args.seed)
    texts, labels = read_csv(args.data / "train.csv")
    test_x, test_y = read_csv(args.data / "test.csv")
    if args.test_limit:
        idx = np.random.default_rng(0).choice(len(test_x), args.test_limit, replace=False)
        test_x, test_y = [test_x[i] for i in idx], [test_y[i] for i in idx]
    by_intent: dict[str, list[int]] = {}
    for i, y in enumerate(labels):
        by_intent.setdefault(y, []).append(i)
    start = sorted(
        int(i)
        for ids in by_intent.values()
        for i in rng.choice(ids, START_PER_INTENT, replace=False)
    )
    rest = sorted(set(range(len(texts))) - set(start))
    if args.pool_limit:
        rest = sorted(int(i) for i in rng.choice(rest, args.pool_limit, replace=False))
    keep = start + rest  # the project: start labelled, the rest unlabelled
    texts, labels = [texts[i] for i in keep], [labels[i] for i in keep]
    start = list(range(len(start)))

    def retrain(tr_x: list[str], tr_y: list[str]) -> Any:
        began = time.monotonic()
        trained = train_encoder(
            "minilm", tr_x, [(y,) for y in tr_y], TrainConfig(seed=args.seed), device=args.device
        )
        logger.info("retrained on %d labels in %.0f s", len(tr_x), time.monotonic() - began)
        return trained.encoder()

    began = time.monotonic()
    base = load_encoder("minilm", device=args.device)
    saved = args.vectors / (
        f"active-seed{args.seed}-pool{args.pool_limit}-test{args.test_limit}.npy"
        if args.vectors
        else None
    )
    if saved is not None and saved.is_file():  # the frozen vectors of an earlier run
        frozen = np.load(saved)
    else:
        frozen = np.asarray(base.encode(texts + test_x, batch_size=128))
        if saved is not None:
            saved.parent.mkdir(parents=True, exist_ok=True)
            np.save(saved, frozen)
    logger.info("%d texts encoded in %.0f s", len(frozen), time.monotonic() - began)
    ref_x, ref_y = read_csv(args.data / f"train_10shot_seed{args.seed}.csv")
    ref_enc = base if args.no_retrain else retrain(ref_x, ref_y)
    ref_vecs = np.asarray(ref_enc.encode(ref_x + test_x, batch_size=128))
    ref = accuracy(ref_vecs, ref_y, list(range(len(ref_x))), ref_vecs[len(ref_x) :], test_y)
    logger.info("reference: %.3f", ref)
    runs: list[dict[str, Any]] = []
    setup = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    setup.update(pool=len(texts) - len(start), start=len(start), test=len(test_x))
    for how in orders:
        runs.append(
            run_order(
                how,
                texts,
                labels,
                start,
                frozen,
                test_x,
                test_y,
                None if args.no_retrain else retrain,
                args,
            )
        )
        for r in runs:
            r["labels_to_reference"] = labels_to_reach(r["curve"], ref)
        args.out.mkdir(parents=True, exist_ok=True)
        name = "active-frozen" if args.no_retrain else "active"
        payload = {"setup": setup, "reference": {"acc": ref, "labels": len(ref_x)}, "runs": runs}
        (args.out / f"{name}.json").write_text(json.dumps(payload, indent=2), encoding="utf-8")
        (args.out / f"{name}.md").write_text(table(runs, ref, len(ref_x)) + "\n", encoding="utf-8")
        print(table(runs, ref, len(ref_x)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
