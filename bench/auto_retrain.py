"""Benchmark: what an automatic retrain should start from, and what a retrain after a few new
labels is worth (issue 63 items 2 and 4).

A designer labels ``--labels`` utterances at a time; after each batch an automatic retrain runs.
From a project that starts with ``--start-shots`` examples per intent (the first ones of the
seed's 10-shot file, the base trained on them with the product's recipe), ``--rounds`` rounds
each add ``--labels`` more of the seed's 10-shot examples (in a seeded order) and then measure:

- ``labels only``: the encoder serving before this round's retrain, its pool with the new
  labels (they count at once, without a retrain);
- ``from base``: the product's recipe (``TrainConfig()``: the anytime recipe, 4 passes) trained
  from the base encoder on every label so far: what every retrain did until now (``…, first
  pass``: its first pass, what it serves first when that passes the gate against the active
  version, ``labels only``);
- ``from active, N ep.``: the product's recipe with ``N`` passes (the first on its own
  schedule, then the rest) trained from the previous round's model of the same chain (its own,
  round after round: the drift of many automatic retrains is in it) on every label so far: 1
  pass costs a quarter of ``from base``, 2 passes half; ``…, first pass``: its first pass (what
  an anytime retrain serves first).

Accuracy is the app's decision (nearest example + prototype with the intents' names) on the
whole test set; ``train CPU s`` the process's CPU seconds of training. The rule of the issue:
an automatic retrain may start from the active version only if that reaches ``from base``
within 0.3 points for at most half the cost, over 3 seeds on BANKING77 and CLINC150.

Usage:
    python -m bench.auto_retrain --datasets banking77,clinc150 --seeds 0,1,2
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

from bench._common import offline_models
from bench.csvdata import first_per_intent, read_csv, read_shots
from bench.train import score

ROOT = Path(__file__).resolve().parents[1]
offline_models()

logger = logging.getLogger("bench.auto_retrain")

PASSES = (1, 2)  # the from-active budgets measured: a quarter and half of the recipe's 4


def train(
    texts: list[str],
    labels: list[str],
    seed: int,
    *,
    epochs: int | None = None,
    start: Any = None,
    first: list[Any] | None = None,
) -> tuple[Any, float]:
    """A model trained on these labels with the product's recipe (its passes: ``epochs``, 4 by
    default; a first pass on its own schedule, then the rest), from ``start`` (default: the
    base encoder), and its CPU seconds. ``first`` receives the first pass's checkpoint when
    there is one (what serves first)."""
    from core.training import TrainConfig, train_encoder

    cfg = TrainConfig(seed=seed) if epochs is None else TrainConfig(seed=seed, epochs=epochs)
    cpu = time.process_time()

    def checkpoint(ck: Any) -> None:
        if not ck.final and first is not None:
            first.append(ck.trained)

    trained = train_encoder(
        "minilm", texts, [(y,) for y in labels], cfg, start=start, checkpoint=checkpoint
    )
    return trained, time.process_time() - cpu


def run(ds: str, seed: int, args: argparse.Namespace) -> list[dict[str, Any]]:
    te_x, te_y = read_csv(args.data / ds / "test.csv")
    x10, y10 = read_shots(args.data / ds, 10, seed)
    first = set(first_per_intent(y10, args.start_shots))
    rest = [i for i in range(len(x10)) if i not in first]
    random.Random(seed).shuffle(rest)
    rows: list[dict[str, Any]] = []

    def given(r: int) -> tuple[list[str], list[str]]:
        keep = sorted(first | set(rest[: r * args.labels]))
        return [x10[i] for i in keep], [y10[i] for i in keep]

    def row(r: int, recipe: str, trained: Any, cpu: float | None, x: list[str], y: list[str]):
        acc = score(trained.encoder(), x, y, te_x, te_y)["acc"]
        out = {
            "dataset": ds,
            "seed": seed,
            "round": r,
            "labels": len(x),
            "recipe": recipe,
            "acc": acc,
            "train_cpu_s": None if cpu is None else round(cpu, 1),
            "load_1min": round(os.getloadavg()[0], 1),
        }
        logger.info("%s", out)
        rows.append(out)

    x, y = given(0)
    base_model, cpu = train(x, y, seed)
    row(0, "from base", base_model, cpu, x, y)
    chains = {n: base_model for n in PASSES}
    for r in range(1, args.rounds + 1):
        x, y = given(r)
        row(r, "labels only", base_model, None, x, y)
        first_base: list[Any] = []
        base_model, cpu = train(x, y, seed + r, first=first_base)
        row(r, "from base", base_model, cpu, x, y)
        row(r, "from base, first pass", first_base[0], None, x, y)
        for n in PASSES:
            first_pass: list[Any] = []
            chains[n], cpu = train(
                x, y, seed + r, epochs=n, start=chains[n].model, first=first_pass
            )
            row(r, f"from active, {n} ep.", chains[n], cpu, x, y)
            if first_pass:  # what serves first: the first pass from the active version
                row(r, f"from active, {n} ep., first pass", first_pass[0], None, x, y)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """Per data set, round and recipe: accuracy per seed, the median, and the median train CPU
    seconds; then each recipe's accuracy less ``from base``'s, over every round and seed."""
    out = [
        "| dataset | round | labels | recipe | acc % (per seed) | **median** | train CPU s |",
        "|---|---|---|---|---|---|---|",
    ]
    keys = sorted({(r["dataset"], r["round"], r["recipe"]) for r in rows})
    for ds, rnd, recipe in keys:
        sel = [r for r in rows if (r["dataset"], r["round"], r["recipe"]) == (ds, rnd, recipe)]
        accs = [100 * r["acc"] for r in sorted(sel, key=lambda r: r["seed"])]
        cpus = [r["train_cpu_s"] for r in sel if r["train_cpu_s"] is not None]
        out.append(
            f"| {ds} | {rnd} | {statistics.median(r['labels'] for r in sel):.0f} | {recipe} | "
            f"{' / '.join(f'{a:.2f}' for a in accs)} | **{statistics.median(accs):.2f}** | "
            f"{statistics.median(cpus):.0f} |"
            if cpus
            else f"| {ds} | {rnd} | {statistics.median(r['labels'] for r in sel):.0f} | "
            f"{recipe} | {' / '.join(f'{a:.2f}' for a in accs)} | "
            f"**{statistics.median(accs):.2f}** | – |"
        )
    out += ["", "| dataset | recipe | vs from base, points: median (min, max) | CPU vs from base |"]
    out.append("|---|---|---|---|")
    for ds in sorted({r["dataset"] for r in rows}):
        base = {
            (r["seed"], r["round"]): r
            for r in rows
            if r["dataset"] == ds and r["recipe"] == "from base" and r["round"] > 0
        }
        for recipe in sorted({r["recipe"] for r in rows if r["recipe"] != "from base"}):
            pairs = [
                (r, base[(r["seed"], r["round"])])
                for r in rows
                if r["dataset"] == ds and r["recipe"] == recipe and (r["seed"], r["round"]) in base
            ]
            if not pairs:
                continue
            diffs = [100 * (a["acc"] - b["acc"]) for a, b in pairs]
            ratios = [
                a["train_cpu_s"] / b["train_cpu_s"]
                for a, b in pairs
                if a["train_cpu_s"] and b["train_cpu_s"]
            ]
            cost = f"{statistics.median(ratios):.2f}x" if ratios else "–"
            out.append(
                f"| {ds} | {recipe} | {statistics.median(diffs):+.2f} ({min(diffs):+.2f}, "
                f"{max(diffs):+.2f}) | {cost} |"
            )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--datasets", default="banking77,clinc150")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--start-shots", type=int, default=5)
    ap.add_argument("--labels", type=int, default=20, help="labels given between two retrains")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "auto-retrain.json")
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
