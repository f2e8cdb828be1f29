"""Benchmark: a first version that continues from the active one (issue 71 item 1).

A designer labels ``--labels`` utterances between two retrains. From a project trained once on
the seed's 10-shot file (the product's recipe from the base encoder: the active version), each
of ``--rounds`` rounds adds ``--labels`` more utterances of the data set's train split (in a
seeded order) and runs what a retrain now does:

- ``labels only``: the active version with the new labels in its pool (what serves until a new
  version does, and what the gate compares a new version with);
- ``continued``: the product's continuation (``train_encoder(start=active, focus=new labels)``:
  4 passes over the new labels, each batch filled with other intents, half the rate), rounded
  to fp16 as a version is saved: the job's first version;
- ``from base``: the product's whole recipe from the base encoder (what every retrain did);
- ``served``: what the job ends with by the product's rule: the continuation serves when its
  gate passes on a sample of ``--sample`` test questions stratified by intent (paired with
  ``labels only``, a tolerance of one point); the from-base run replaces it only when it
  measures better on that sample; the whole split then checks the gate again (a version it
  says lost goes back to the active one). It is the next round's active version.

Accuracy is the app's decision (nearest example + prototype with the intents' names) on the
whole test split. The issue's rule: ``continued`` ≥ ``labels only`` − 0.3 points in at least
90 % of rounds, and ``served`` (the job's end) within 0.3 of ``from base`` (today's).

Usage:
    python -m bench.continue_active --datasets banking77,clinc150 --seeds 0,1,2 --rounds 5
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench._common import offline_models
from bench.csvdata import read_csv, read_shots

ROOT = Path(__file__).resolve().parents[1]
offline_models()

logger = logging.getLogger("bench.continue_active")
TOLERANCE = 0.01  # app.services.training.retrain_serve.PROMOTION_TOLERANCE


_VECTORS: dict[int, dict[str, np.ndarray]] = {}  # per model (its id): each text's vector


def _encode(model: Any, texts: list[str]) -> np.ndarray:
    """``texts`` encoded by ``model``, each text once per model (the active version of a round
    is a model of the round before: its test questions' vectors are known)."""
    known = _VECTORS.setdefault(id(model), {})
    missing = [t for t in dict.fromkeys(texts) if t not in known]
    if missing:
        vectors = model.encoder().encode(missing, batch_size=128)
        known.update(zip(missing, vectors, strict=True))
    return np.stack([known[t] for t in texts])


def hits(model: Any, tr_x: list[str], tr_y: list[str], te_x: list[str], te_y: list[str]):
    """Whether the app's decision (nearest example + prototype, with the intents' names as
    anchors) answers each test question right, with ``model``'s encoder."""
    from core.retrieval.anchors import DEFAULT_ANCHOR_WEIGHT, anchor_texts
    from core.retrieval.factory import Anchors, PredictorFactory

    enc = model.encoder()
    pool, queries = _encode(model, tr_x), _encode(model, te_x)
    anchors = anchor_texts(tr_y)
    names, texts = list(anchors), list(anchors.values())
    factory = PredictorFactory(
        enc,
        anchors=Anchors(
            dict(zip(names, texts, strict=True)), DEFAULT_ANCHOR_WEIGHT, _encode(model, texts)
        ),
    )
    tops = factory.build(tr_x, tr_y, vectors=pool).tops(queries).intents
    return np.asarray([t == g for t, g in zip(tops, te_y, strict=True)])


def train(texts, labels, seed, *, start=None, focus=None) -> tuple[Any, float]:
    """A model trained as the product trains it (from the base, or continuing ``start`` on
    ``focus``), rounded to fp16 as a version is saved, and its CPU seconds."""
    from core.training import TrainConfig, train_encoder
    from core.training.model_io import changed_layers

    cpu = time.process_time()
    trained = train_encoder(
        "minilm", texts, [(y,) for y in labels], TrainConfig(seed=seed), start=start, focus=focus
    )
    seconds = time.process_time() - cpu
    changed_layers(trained.model, "minilm")  # what the product saves and serves
    return trained, seconds


def run(ds: str, seed: int, args: argparse.Namespace) -> list[dict[str, Any]]:
    from core.evaluation.paired import paired, stratified_sample

    te_x, te_y = read_csv(args.data / ds / "test.csv")
    x, y = read_shots(args.data / ds, 10, seed)
    tr_x, tr_y = read_csv(args.data / ds / "train.csv")
    have = set(x)
    order = [i for i, t in enumerate(tr_x) if t not in have]
    random.Random(seed).shuffle(order)
    sample = stratified_sample([(g,) for g in te_y], args.sample, seed)
    rows: list[dict[str, Any]] = []
    active, cpu0 = train(x, y, seed)
    logger.info("%s seed %d: round 0 trained in %.0f CPU s", ds, seed, cpu0)
    for r in range(1, args.rounds + 1):
        new = order[(r - 1) * args.labels : r * args.labels]
        focus = list(range(len(x), len(x) + len(new)))
        x = x + [tr_x[i] for i in new]
        y = y + [tr_y[i] for i in new]
        ref = hits(active, x, y, te_x, te_y)
        cont, cont_cpu = train(x, y, seed + r, start=active.model, focus=focus)
        cont_hits = hits(cont, x, y, te_x, te_y)
        base, base_cpu = train(x, y, seed + r)
        base_hits = hits(base, x, y, te_x, te_y)
        # the product's rule, on the sample then the whole split
        on_sample = paired(cont_hits[sample], ref[sample])
        passes = cont_hits[sample].mean() + TOLERANCE >= ref[sample].mean()
        served, served_hits = (cont, cont_hits) if passes else (active, ref)
        replaced = base_hits[sample].mean() > served_hits[sample].mean()
        if replaced:
            served, served_hits = base, base_hits
        whole_ok = served_hits.mean() + TOLERANCE >= ref.mean()
        if served is not active and not whole_ok:  # the record sends it back
            served, served_hits = active, ref
        row = {
            "dataset": ds,
            "seed": seed,
            "round": r,
            "labels": len(x),
            "labels_only": float(ref.mean()),
            "continued": float(cont_hits.mean()),
            "from_base": float(base_hits.mean()),
            "served": float(served_hits.mean()),
            "gate_passed": bool(passes),
            "gate_words": on_sample.words(),
            "from_base_replaced": bool(replaced),
            "continued_cpu_s": round(cont_cpu, 1),
            "from_base_cpu_s": round(base_cpu, 1),
            "load_1min": round(os.getloadavg()[0], 1),
        }
        logger.info("%s", row)
        rows.append(row)
        active = served
        for key in [k for k in _VECTORS if k != id(active)]:  # only the active one's are reused
            del _VECTORS[key]
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    out = [
        "| data | seed | round | labels | labels only | continued (Δ) | from base (Δ) | served "
        "(Δ vs from base) | gate on the sample | from base replaced it | CPU s cont. / base |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lo = 100 * r["labels_only"]
        out.append(
            f"| {r['dataset']} | {r['seed']} | {r['round']} | {r['labels']} | {lo:.2f} | "
            f"{100 * r['continued']:.2f} ({100 * r['continued'] - lo:+.2f}) | "
            f"{100 * r['from_base']:.2f} ({100 * r['from_base'] - lo:+.2f}) | "
            f"{100 * r['served']:.2f} ({100 * (r['served'] - r['from_base']):+.2f}) | "
            f"{'serves' if r['gate_passed'] else 'kept back'}: {r['gate_words']} | "
            f"{'yes' if r['from_base_replaced'] else 'no'} | "
            f"{r['continued_cpu_s']:.0f} / {r['from_base_cpu_s']:.0f} |"
        )
    out += ["", "| data | rounds | continued ≥ labels only − 0.3 | served within 0.3 of from base "
            "| continued − labels only, median (min, max) | from base replaced | CPU cont./base |",
            "|---|---|---|---|---|---|---|"]  # fmt: skip
    for ds in [*sorted({r["dataset"] for r in rows}), "all"]:
        sel = [r for r in rows if ds in ("all", r["dataset"])]
        d = [100 * (r["continued"] - r["labels_only"]) for r in sel]
        ok = sum(x >= -0.3 for x in d)
        near = sum(100 * (r["served"] - r["from_base"]) >= -0.3 for r in sel)
        ratio = statistics.median(r["continued_cpu_s"] / r["from_base_cpu_s"] for r in sel)
        out.append(
            f"| {ds} | {len(sel)} | {ok} of {len(sel)} ({100 * ok / len(sel):.0f} %) | "
            f"{near} of {len(sel)} | {statistics.median(d):+.2f} ({min(d):+.2f}, {max(d):+.2f}) | "
            f"{sum(r['from_base_replaced'] for r in sel)} of {len(sel)} | {ratio:.2f}x |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--datasets", default="banking77,clinc150")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--labels", type=int, default=20, help="labels given between two retrains")
    ap.add_argument("--sample", type=int, default=1000, help="the gate's test questions")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "continue.json")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    import torch

    torch.set_num_threads(args.threads)
    rows: list[dict[str, Any]] = []
    for ds in args.datasets.split(","):
        for seed in [int(s) for s in args.seeds.split(",")]:
            rows += run(ds, seed, args)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps({"rows": rows, "args": vars(args)}, default=str))
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
