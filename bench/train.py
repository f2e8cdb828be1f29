"""Benchmark of the specialisation methods: accuracy and time to a usable model, median over seeds.

Reads ``<data>/<dataset>/train_<shots>shot_seed<N>.csv`` (5-shot: the first 5 per intent of the
10-shot file, :func:`bench.csvdata.read_shots`) and ``test.csv`` (``text,label``). Every tuned or
frozen encoder is scored three ways over the same vectors:

- ``acc``: **the app's default decision**: nearest example + prototype with each intent's name as
  its anchor at the default weight (:mod:`core.retrieval.knn`, :mod:`core.retrieval.anchors`).
- ``acc_np``: nearest + prototype without anchors;  ``acc_1nn``: ConvFiT's 1-NN over the shots.

Times: ``train_s`` (training, imports and model load excluded: they are warmed once),
``eval_s`` (encoding the pool and the test set, classifying), ``total_s`` = both; the issue's
target is ``total_s`` <= 60 s on 2 cores for the default. Methods:

- ``frozen``: the base encoder.               - ``frozen_lr``: logistic regression on frozen vectors.
- ``fast``: **the app default**, ConvFiT Stage 2 with an in-batch ranking loss (``TrainConfig()``,
  ``method="convfit"``, called ``fast`` until issue 55: the fast recipe, lowest 3 layers frozen and
  their states cached, :mod:`core.training.prefix`), as an anytime retrain trains it since issue
  63: a first pass on its own schedule, scored as it comes (the ``fast@<steps>`` row: the first
  version a retrain serves), then the other passes (the ``fast`` row);
  ``fast[first_pass=0]`` trains every pass on one schedule (the recipe before issue 63).
- ``fast_full``: the fast recipe with every layer trained (the default until this change).
- ``fast_selftrain``: + a second pass on 50 pseudo-labels per intent from ``--pool`` unlabelled
  utterances of ``train.csv`` (the Train tab's "fast + unlabelled utterances"; time: both passes).
- ``lora``: the fast recipe on LoRA adapters only.
- ``setfit`` / ``setfit_equal``: SetFit at its defaults / at the fast default's step count
  (``pip install -e .[bench]``).
- ``mpnet_fast``: the default recipe on all-mpnet-base-v2 (``make mpnet``).
- ``fast[key=value;...]``: the default with these ``TrainConfig`` settings, e.g.
  ``fast[epochs=6;freeze_layers=2]``; ``lora[...]`` the same on LoRA. ``fast[epochs=1]``,
  ``fast[epochs=2]``, ``fast``, ``fast[epochs=8]``... are the default recipe's learning curve
  (each point a whole run at that budget; ``steps`` in the table).
- ``convfit_paper``: ConvFiT Stage 2 as the paper trains it (sampled pairs, OCL, 3 random
  negatives per positive, 2e-5, every layer; :mod:`bench.experiments.convfit`): 10 epochs, or the
  budget of ``--steps``: its schedule fitted to the largest, scored after each (``@<steps>``
  rows: the learning curve). ``convfit_paper[steps=N;hard=true;lr=1e-4]``: a budget of its own,
  hard negatives (nearest other-intent utterances in the frozen space), another peak rate;
  ``convfit_paper[epochs=10]``: the paper's whole schedule, scored at ``--steps`` on the way (the
  GPU run: 7,580 steps on BANKING77, 14,770 on CLINC150 at 10 shots).

ConvFiT Stage 2 left ``TrainConfig`` after losing to ``fast`` on every seed at the fast default's
step budget (``convfit_budget`` and the ``cos``/``smax`` losses; bench/RESULTS.md, issue 46 item 2;
git history has the code that ran them); ``convfit_paper`` measures it at budgets of its own.

Usage:
    python -m bench.train --datasets banking77 --seeds 0 --methods frozen,fast,fast_full
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench._common import offline_models
from bench.csvdata import read_csv, read_shots

ROOT = Path(__file__).resolve().parents[1]

offline_models()

logger = logging.getLogger("bench.train")

ALL_METHODS = [
    "frozen",
    "frozen_lr",
    "fast",
    "fast_full",
    "fast_selftrain",
    "lora",
    "setfit",
    "setfit_equal",
    "mpnet_fast",
    "convfit_paper",
]
# Pseudo-labels per intent of ``fast_selftrain`` (the app's "fast + unlabelled utterances").
SELF_TRAIN = 50


class Cell:
    """Times a method (wall and process CPU seconds)."""

    def __init__(self) -> None:
        self.wall = time.monotonic()
        self.cpu = time.process_time()

    def done(self) -> tuple[float, float]:
        return time.monotonic() - self.wall, time.process_time() - self.cpu


def score(
    enc: Any,
    tr_x: list[str],
    tr_y: list[str],
    te_x: list[str],
    te_y: list[str],
) -> dict[str, float]:
    """Accuracy of the app's default decision (``acc``), of nearest + prototype without anchors
    (``acc_np``) and of 1-NN (``acc_1nn``), and the seconds to encode and classify (``eval_s``)."""
    from core.retrieval.anchors import DEFAULT_ANCHOR_WEIGHT, anchor_texts
    from core.retrieval.factory import Anchors, PredictorFactory
    from core.retrieval.knn import NEAREST

    started = time.monotonic()
    pool, queries = enc.encode(tr_x, batch_size=128), enc.encode(te_x, batch_size=128)
    anchors = anchor_texts(tr_y)
    names, texts = list(anchors), list(anchors.values())
    vectors = enc.encode(texts, batch_size=128)
    with_anchors = PredictorFactory(
        enc, anchors=Anchors(dict(zip(names, texts, strict=True)), DEFAULT_ANCHOR_WEIGHT, vectors)
    )
    gold = np.asarray(te_y)

    def accuracy(factory: PredictorFactory) -> float:
        preds = factory.build(tr_x, tr_y, vectors=pool).rank(queries, show=0, depth=50)
        return float(np.mean(np.asarray([p.top or "" for p in preds]) == gold))

    out = {"acc": accuracy(with_anchors)}
    eval_s = time.monotonic() - started
    out["acc_1nn"] = accuracy(with_anchors.replace(rule=NEAREST))
    out["acc_np"] = accuracy(with_anchors.replace(anchors=None))
    return {**out, "eval_s": eval_s}


def unlabelled_pool(folder: Path, shots: list[str], size: int, seed: int) -> list[str]:
    """``size`` utterances of ``train.csv`` that are not among the shots (seeded sample)."""
    texts, _ = read_csv(folder / "train.csv")
    taken = set(shots)
    rest = [t for t in dict.fromkeys(texts) if t not in taken]
    rng = np.random.default_rng(seed)
    keep = sorted(rng.choice(len(rest), min(size, len(rest)), replace=False))
    return [rest[i] for i in keep]


# Methods that take ``[key=value;...]`` settings: the base method of their ``TrainConfig``.
CUSTOM = ("fast", "lora")


def overrides(method: str) -> dict[str, Any] | None:
    """The settings of a ``fast[key=value;...]`` (or ``lora[...]``) method,
    values as JSON, else text, with the base method under ``method``; else None."""
    base, bracket, rest = method.partition("[")
    if not (bracket and base in CUSTOM and rest.endswith("]")):
        return None
    out: dict[str, Any] = {"method": base}
    for item in filter(None, rest[:-1].split(";")):
        key, _, value = item.partition("=")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value.strip()
    return out


def config_for(method: str, seed: int, args: Any) -> Any:
    from core.training import TrainConfig

    custom = overrides(method)
    if custom is not None:
        return TrainConfig(**{"seed": seed, **custom})
    if method in ("fast", "mpnet_fast", "fast_selftrain"):
        return TrainConfig(seed=seed)
    if method == "fast_full":
        return TrainConfig(seed=seed, freeze_layers=0)
    if method == "lora":
        return TrainConfig(method="lora", seed=seed)
    raise ValueError(f"unknown method {method}")


def run_cell(
    method: str, tr_x: list[str], tr_y: list[str], te_x: list[str], te_y: list[str], args: Any
) -> dict[str, Any]:
    from core.encoding.registry import load_encoder
    from core.training import train_encoder

    seed = args.train_seed
    if method in ("frozen", "frozen_lr"):
        enc = load_encoder(args.encoder, device=args.device)
        if method == "frozen":
            return {**score(enc, tr_x, tr_y, te_x, te_y), "train_s": 0.0, "cpu_s": 0.0}
        from sklearn.linear_model import LogisticRegression

        cell = Cell()
        train_vecs = enc.encode(tr_x, batch_size=128)
        clf = LogisticRegression(max_iter=2000, C=10.0)
        clf.fit(train_vecs, tr_y)
        wall, cpu = cell.done()
        started = time.monotonic()
        pred = clf.predict(enc.encode(te_x, batch_size=128))
        eval_s = time.monotonic() - started
        acc = float(np.mean(pred == np.asarray(te_y)))
        return {"acc": acc, "train_s": wall, "cpu_s": cpu, "eval_s": eval_s}
    if method.startswith("setfit"):
        return run_setfit(method, tr_x, tr_y, te_x, te_y, args)
    if method.partition("[")[0] == "convfit_paper":
        return run_convfit(method, tr_x, tr_y, te_x, te_y, args)
    base = "mpnet" if method.startswith("mpnet") else args.encoder
    if base == "mpnet":
        try:
            import core.encoding.mpnet  # noqa: F401  (registers the encoder)

            load_encoder("mpnet", device=args.device)
        except Exception as exc:  # a missing optional model is a row, not a crash
            return {"error": f"mpnet is not installed (make mpnet): {exc}"}
    cfg = config_for(method, seed, args)
    labels = [(y,) for y in tr_y]
    cell = Cell()
    curve: list[dict[str, Any]] = []
    scoring = [0.0, 0.0]  # wall and CPU seconds spent scoring checkpoints, not training

    def checkpoint(ck: Any) -> None:
        """An anytime retrain's earlier checkpoint (its first pass), scored as it comes."""
        if ck.final:
            return
        wall, cpu = cell.done()
        started, cpu0 = time.monotonic(), time.process_time()
        scores = score(ck.trained.encoder(), tr_x, tr_y, te_x, te_y)
        curve.append(
            {**scores, "steps": ck.step, "train_s": wall - scoring[0], "cpu_s": cpu - scoring[1]}
        )
        logger.info("%s after %d of %d steps: acc %.4f", method, ck.step, ck.total, scores["acc"])
        scoring[0] += time.monotonic() - started
        scoring[1] += time.process_time() - cpu0

    trained = train_encoder(base, tr_x, labels, cfg, device=args.device, checkpoint=checkpoint)
    extra: dict[str, Any] = {"curve": curve} if curve else {}
    if method == "fast_selftrain":
        from bench.experiments.pseudo_labels import pseudo_labels
        from core.retrieval.factory import vector_pool

        enc = trained.encoder()
        pool = unlabelled_pool(args.data / args.dataset, tr_x, args.pool, seed)
        chosen = pseudo_labels(
            vector_pool(enc.encode(tr_x, batch_size=128), tr_y),
            enc.encode(pool, batch_size=128),
            SELF_TRAIN,
        )
        px, py = [pool[j] for j, _ in chosen], [(y,) for _, y in chosen]
        trained = train_encoder(base, tr_x + px, labels + py, cfg, device=args.device)
        extra.pop("curve", None)
        extra["pseudo_labels"] = len(px)
    wall, cpu = cell.done()
    wall, cpu = wall - scoring[0], cpu - scoring[1]
    scores = score(trained.encoder(), tr_x, tr_y, te_x, te_y)
    if method == "fast":
        args.fast_steps = trained.stats["steps"]
        args.fast_wall = wall
    return {**scores, "train_s": wall, "cpu_s": cpu, "steps": trained.stats["steps"], **extra}


def convfit_settings(method: str) -> dict[str, Any] | None:
    """The settings of ``convfit_paper[key=value;...]`` (``steps``, ``epochs``, ``hard``, ``lr``),
    else None."""
    base, bracket, rest = method.partition("[")
    if base != "convfit_paper":
        return None
    if bracket and not rest.endswith("]"):
        return None
    out: dict[str, Any] = {}
    for item in filter(None, rest[:-1].split(";")):
        key, _, value = item.partition("=")
        if key.strip() not in ("steps", "epochs", "hard", "lr"):
            return None
        out[key.strip()] = json.loads(value)
    return out


def run_convfit(
    method: str, tr_x: list[str], tr_y: list[str], te_x: list[str], te_y: list[str], args: Any
) -> dict[str, Any]:
    """The paper's recipe (:mod:`bench.experiments.convfit`), scored after each of ``--steps``
    up to its budget: the final row, with the checkpoints under ``curve``."""
    from bench.experiments.convfit import train_convfit
    from core.encoding.registry import encoder_from_model

    settings = convfit_settings(method) or {}
    marks = sorted(args.steps)
    # a budget of its own, else the paper's epochs when asked for, else the largest checkpoint
    budget = settings.get("steps", None if "epochs" in settings or not marks else marks[-1])
    marks = [s for s in marks if budget is None or s <= budget]
    curve: list[dict[str, Any]] = []
    cell = Cell()
    scoring = [0.0, 0.0]  # wall and CPU seconds spent scoring checkpoints, not training

    def checkpoint(step: int, model: Any) -> None:
        wall, cpu = cell.done()
        started, cpu0 = time.monotonic(), time.process_time()
        enc = encoder_from_model(model, f"{args.encoder}+convfit", f"convfit@{step}")
        scores = score(enc, tr_x, tr_y, te_x, te_y)
        curve.append(
            {**scores, "steps": step, "train_s": wall - scoring[0], "cpu_s": cpu - scoring[1]}
        )
        logger.info("%s after %d steps: acc %.4f", method, step, scores["acc"])
        scoring[0] += time.monotonic() - started
        scoring[1] += time.process_time() - cpu0

    model, stats = train_convfit(
        args.encoder,
        tr_x,
        [(y,) for y in tr_y],
        seed=args.train_seed,
        steps=budget,
        epochs=float(settings.get("epochs", 10)),
        hard=bool(settings.get("hard", False)),
        lr=settings.get("lr"),
        checkpoints=marks,
        checkpoint=checkpoint,
        device=args.device,
    )
    wall, cpu = cell.done()
    scores = score(
        encoder_from_model(model, f"{args.encoder}+convfit", "convfit"), tr_x, tr_y, te_x, te_y
    )
    return {
        **scores,
        "train_s": wall - scoring[0],
        "cpu_s": cpu - scoring[1],
        **stats,
        "curve": curve,
    }


def run_setfit(
    method: str, tr_x: list[str], tr_y: list[str], te_x: list[str], te_y: list[str], args: Any
) -> dict[str, Any]:
    try:
        from datasets import Dataset
        from setfit import SetFitModel, Trainer, TrainingArguments
    except ImportError:
        return {"error": "setfit is not installed (pip install setfit)"}
    from core.encoding.registry import resolve_path

    model = SetFitModel.from_pretrained(str(resolve_path(args.encoder)), local_files_only=True)
    kwargs: dict[str, Any] = {"seed": args.train_seed}
    if method == "setfit_equal" and args.fast_wall:
        # one pass over a pair budget sized to the fast default's wall time
        kwargs.update(num_epochs=1, max_steps=max(1, int(args.fast_steps or 100)))
    train = Dataset.from_dict({"text": tr_x, "label": tr_y})
    with tempfile.TemporaryDirectory(
        prefix="setfit-"
    ) as tmp:  # its checkpoints stay out of the tree
        kwargs["output_dir"] = tmp
        trainer = Trainer(model=model, args=TrainingArguments(**kwargs), train_dataset=train)
        cell = Cell()
        trainer.train()
        wall, cpu = cell.done()
    pred = model.predict(te_x)
    acc = float(np.mean(np.asarray([str(p) for p in pred]) == np.asarray(te_y)))
    return {"acc": acc, "train_s": wall, "cpu_s": cpu}


def warm_up(args: Any) -> None:
    """Import the libraries and load the encoder once, so no cell's time includes them."""
    from core.encoding.registry import load_encoder
    from core.training import train_encoder  # noqa: F401  (the import is the warm-up)

    load_encoder(args.encoder, device=args.device).encode(["warm up"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--datasets", default="banking77,clinc150")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--methods", default=",".join(ALL_METHODS))
    ap.add_argument("--shots", type=int, default=10)
    ap.add_argument("--encoder", default="minilm")
    ap.add_argument("--device", default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--pool", type=int, default=2000, help="unlabelled utterances for fast_selftrain"
    )
    ap.add_argument(
        "--test-limit", type=int, default=0, help="score a seeded subset of the test set"
    )
    ap.add_argument(
        "--steps",
        type=lambda v: [int(s) for s in v.split(",") if s],
        default=[],
        help="convfit_paper's learning curve: scored after each of these steps, its schedule "
        "fitted to the largest (default: the paper's 10 epochs, no checkpoints)",
    )
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    ap.add_argument("--name", default="", help="suffix of the result files' names")
    ap.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        default=None,
        help="print the tables of these result files together (runs split into processes), "
        "train nothing",
    )
    args = ap.parse_args(argv)
    if args.merge:
        merged = [r for f in args.merge for r in json.loads(f.read_text())["results"]]
        print(table(merged))
        print()
        print(curve_table(merged))
        return 0
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    import torch

    torch.set_num_threads(args.threads)
    methods = [m for m in args.methods.split(",") if m]
    unknown = sorted(
        m
        for m in set(methods) - set(ALL_METHODS)
        if overrides(m) is None and convfit_settings(m) is None
    )
    if unknown:
        ap.error(f"unknown methods: {', '.join(unknown)}")
    if "setfit_equal" in methods and "fast" in methods:
        methods = [m for m in methods if m != "setfit_equal"] + ["setfit_equal"]
    warm_up(args)
    results: list[dict[str, Any]] = []
    for ds in args.datasets.split(","):
        te_x, te_y = read_csv(args.data / ds / "test.csv")
        if args.test_limit:
            idx = np.random.default_rng(0).choice(len(te_x), args.test_limit, replace=False)
            te_x, te_y = [te_x[i] for i in idx], [te_y[i] for i in idx]
        for seed in [int(s) for s in args.seeds.split(",")]:
            tr_x, tr_y = read_shots(args.data / ds, args.shots, seed)
            args.dataset, args.train_seed, args.fast_steps, args.fast_wall = ds, seed, None, None
            for method in methods:
                logger.info("%s seed %d: %s", ds, seed, method)
                out = run_cell(method, tr_x, tr_y, te_x, te_y, args)
                points = [(f"{method}@{p.pop('steps')}", p) for p in out.pop("curve", [])]
                for name, part in [*points, (method, out)]:
                    if "train_s" in part and "eval_s" in part:
                        part["total_s"] = part["train_s"] + part["eval_s"]
                    row = {"dataset": ds, "shots": args.shots, "seed": seed, "method": name}
                    row.update(part)
                    if "@" in name:
                        row["steps"] = int(name.rpartition("@")[2])
                    row["load_1min"] = round(os.getloadavg()[0], 1)  # how shared the cores were
                    logger.info("%s", row)
                    results.append(row)
                flush(results, args)
    print(table(results))
    if any("@" in r["method"] for r in results):
        print(curve_table(results))
    return 0


def summarise(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    cells: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
    for r in results:
        if "acc" in r:
            cells.setdefault((r["dataset"], r.get("shots", 10), r["method"]), []).append(r)
    out = []
    for (ds, shots, m), rows in cells.items():

        def med(k: str, rows: list[dict[str, Any]] = rows) -> float | None:
            values = [r[k] for r in rows if r.get(k) is not None]
            return float(statistics.median(values)) if values else None

        def pct(k: str) -> float | None:
            v = med(k)
            return None if v is None else round(100 * v, 2)

        def sec(k: str) -> float | None:
            v = med(k)
            return None if v is None else round(v, 1)

        out.append(
            {
                "dataset": ds,
                "shots": shots,
                "method": m,
                "seeds": [r["seed"] for r in rows],
                "acc_per_seed": [round(100 * r["acc"], 2) for r in rows],
                "acc_median": pct("acc"),
                "acc_np_median": pct("acc_np"),
                "acc_1nn_median": pct("acc_1nn"),
                "train_s_median": sec("train_s"),
                "eval_s_median": sec("eval_s"),
                "total_s_median": sec("total_s"),
                "cpu_s_median": sec("cpu_s"),
                "steps_median": med("steps"),
            }
        )
    return out


def recipe(method: str) -> str:
    """The learning curve a method's row belongs to: the fast default's runs at other epochs
    (``fast[epochs=N]``) are the default recipe's; ``convfit_paper@100`` is ``convfit_paper``'s."""
    base = method.rpartition("@")[0] or method
    custom = overrides(base)
    if custom is not None and set(custom) == {"method", "epochs"}:
        return str(custom["method"])
    return base


def curve_table(results: list[dict[str, Any]]) -> str:
    """Accuracy against optimiser steps, per recipe: the rows that record their steps."""
    rows = [s for s in summarise(results) if s["steps_median"] is not None]
    rows.sort(key=lambda s: (s["dataset"], recipe(s["method"]), s["steps_median"]))
    lines = [
        "| dataset | recipe | steps | acc % (per seed) | **acc % median** | 1-NN | train CPU s |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in rows:
        cpu = "–" if s["cpu_s_median"] is None else f"{s['cpu_s_median']:.0f}"
        nn1 = "–" if s["acc_1nn_median"] is None else f"{s['acc_1nn_median']:.1f}"
        lines.append(
            f"| {s['dataset']} | {recipe(s['method'])} | {s['steps_median']:.0f} "
            f"| {' / '.join(f'{a:.1f}' for a in s['acc_per_seed'])} | **{s['acc_median']:.1f}** "
            f"| {nn1} | {cpu} |"
        )
    return "\n".join(lines)


def table(results: list[dict[str, Any]]) -> str:
    def num(v: float | None) -> str:
        return "–" if v is None else f"{v:.1f}"

    lines = [
        "| dataset | shots | method | seeds | acc % (per seed) | **acc % median** | no anchors | "
        "1-NN | train s | eval s | total s | train CPU s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summarise(results):
        lines.append(
            f"| {s['dataset']} | {s['shots']} | {s['method']} | "
            f"{','.join(map(str, s['seeds']))} "
            f"| {' / '.join(f'{a:.1f}' for a in s['acc_per_seed'])} | **{num(s['acc_median'])}** "
            f"| {num(s['acc_np_median'])} | {num(s['acc_1nn_median'])} "
            f"| {num(s['train_s_median'])} | {num(s['eval_s_median'])} "
            f"| {num(s['total_s_median'])} | {num(s['cpu_s_median'])} |"
        )
    return "\n".join(lines)


def flush(results: list[dict[str, Any]], args: Any) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    payload = {"results": results, "summary": summarise(results), "threads": args.threads}
    name = f"train-{args.shots}shot{args.name}"
    (args.out / f"{name}.json").write_text(json.dumps(payload, indent=2))
    (args.out / f"{name}.md").write_text(table(results) + "\n\n" + curve_table(results) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
