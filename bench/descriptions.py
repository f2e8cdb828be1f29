"""Benchmark of intent names as anchors (:mod:`core.retrieval.anchors`): zero-shot, and joined to
1, 5 and 10 labelled shots per intent, with the app's own Predictor (``PredictorFactory``,
nearest+prototype) so what is measured is what the app does.

Reads ``<data>/<dataset>/train_10shot_seed<N>.csv`` and ``test.csv`` (``text,label``). The pool
is the first ``k`` examples per intent of the 10-shot file (``--shots 10,5,1``). Anchors are the
humanised intent names (``card_arrival`` → "card arrival"): these datasets have no descriptions,
so this measures the weaker of the two anchors. Rows:

- ``zero-shot``: no examples at all, every intent scored by its anchor alone (cold start);
- ``w=0``: no anchors (the app without them); ``w=X``: the anchor counts as X examples in its
  intent's prototype (:meth:`core.retrieval.knn.KnnIndex.set_anchors`).

Metrics: accuracy on ``test.csv``, and the non-siamese bi-encoder paper's **borderline**
diagnostic as a metric: a test utterance is *borderline* when it shares no content word with its
own (gold) intent's name but shares one with a competing intent's name
(:func:`core.retrieval.explain.borderline`, the app's one test: names split on ``_``, stop words
dropped, plural ``s`` folded). ``borderline %`` is their share of the test set, and ``acc
borderline`` the accuracy on them; a siamese model that matches names is expected to do worst
there, so anchors from names should not cost accuracy on that subset.

Encoder: frozen MiniLM (``--encoder frozen``, cheap), or ``tuned`` (the app's default ``fast``
recipe trained on each seed's 10 shots; ~2 min per run on 2 quiet cores: run it under
``nice -n 10``, seed 0 only); ``--train-settings '{"epochs": 6}'`` trains with those
``TrainConfig`` settings. A JSON *list* of settings runs each in turn, one ``training`` column
per setting in the table, e.g. ``'[{}, {"epochs": 6}]'``. Vectors are cached under
``--vectors DIR``. (Training on (utterance, name) pairs and the separate label encoder this
compared once have left ``TrainConfig``: ``bench/RESULTS.md``.)

Usage:
    nice -n 10 python -m bench.descriptions --datasets banking77,clinc150 --seeds 0,1,2
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench._common import offline_models
from bench.csvdata import first_per_intent, read_csv

ROOT = Path(__file__).resolve().parents[1]

offline_models()

from core.retrieval.anchors import anchor_texts  # noqa: E402
from core.retrieval.explain import borderline  # noqa: E402
from core.retrieval.factory import Anchors, PredictorFactory  # noqa: E402

logger = logging.getLogger("bench.descriptions")


def settings_tag(settings: dict[str, Any]) -> str:
    """A short name of a training setting (``{}``: ``default``)."""
    return "-".join(f"{k}={v}" for k, v in sorted(settings.items())) or "default"


def encode_cell(ds: str, seed: int, args: Any, settings: dict[str, Any]) -> dict[str, np.ndarray]:
    """Vectors of the seed's train file, the test file and the intents' anchors (cached)."""
    tag = args.encoder
    if args.encoder == "tuned" and settings:
        tag += "-" + settings_tag(settings)
    saved = args.vectors / ds / f"{tag}-seed{seed}.npz" if args.vectors else None
    if saved is not None and saved.is_file():
        with np.load(saved) as z:
            return {k: z[k].astype(np.float32) for k in z.files}
    from core.encoding.registry import load_encoder

    tr_x, tr_y = read_csv(args.data / ds / f"train_10shot_seed{seed}.csv")
    te_x = read_csv(args.data / ds / "test.csv")[0]
    started = time.monotonic()
    if args.encoder == "frozen":
        enc: Any = load_encoder(args.base, device=args.device)
    else:
        from core.training import TrainConfig, train_encoder

        config = TrainConfig(seed=seed, **settings)
        trained = train_encoder(
            args.base,
            tr_x,
            [(y,) for y in tr_y],
            config,
            device=args.device,
        )
        enc = trained.encoder()
        logger.info("%s seed %d trained in %.0f s", ds, seed, time.monotonic() - started)
    anchors = anchor_texts(tr_y)
    vecs = {
        "train": enc.encode(tr_x),
        "test": enc.encode(te_x),
        "anchors": enc.encode(list(anchors.values())),
    }
    vecs = {k: np.asarray(v, dtype=np.float32) for k, v in vecs.items()}
    if saved is not None:
        saved.parent.mkdir(parents=True, exist_ok=True)
        np.savez(saved, **vecs)  # type: ignore[arg-type]
    return vecs


def accuracy(
    vecs: dict[str, np.ndarray],
    tr_y: list[str],
    keep: list[int],
    gold: list[str],
    weight: float,
) -> list[bool]:
    """Per test utterance: whether the app's rule with anchors of ``weight`` got it right."""
    anchors = anchor_texts(tr_y)
    factory = PredictorFactory.for_vectors(
        vecs["test"].shape[1], anchors=Anchors(anchors, weight, vecs["anchors"])
    )
    pool = factory.build(
        [str(i) for i in keep], [tr_y[i] for i in keep], vectors=vecs["train"][keep], ids=keep
    )
    preds = pool.rank(vecs["test"], show=1)
    return [p.top == g for p, g in zip(preds, gold, strict=True)]


def borderline_mask(texts: list[str], gold: list[str], intents: list[str]) -> list[bool]:
    return [borderline(t, [g], intents)[0] for t, g in zip(texts, gold, strict=True)]


def summarise(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    cells: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    for r in results:
        key = (r["dataset"], r.get("training", "-"), r["shots"], r["anchors"])
        cells.setdefault(key, []).append(r)
    out = []
    for (ds, training, shots, anchors), rows in cells.items():
        out.append(
            {
                "dataset": ds,
                "training": training,
                "shots": shots,
                "anchors": anchors,
                "seeds": [r["seed"] for r in rows],
                "acc_per_seed": [round(100 * r["acc"], 2) for r in rows],
                "acc_median": round(100 * statistics.median(r["acc"] for r in rows), 2),
                "borderline_share": rows[0]["borderline_share"],
                "acc_borderline_median": round(
                    100 * statistics.median(r["acc_borderline"] for r in rows), 2
                ),
            }
        )
    return out


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| dataset | training | shots | anchors | seeds | acc % (per seed) | acc % median "
        "| borderline % of test | acc % on borderline (median) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summarise(results):
        lines.append(
            f"| {s['dataset']} | {s['training']} | {s['shots']} | {s['anchors']} "
            f"| {','.join(map(str, s['seeds']))} "
            f"| {' / '.join(f'{a:.1f}' for a in s['acc_per_seed'])} | {s['acc_median']:.1f} "
            f"| {100 * s['borderline_share']:.1f} | {s['acc_borderline_median']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--datasets", default="banking77,clinc150")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--shots", default="10,5,1")
    ap.add_argument("--weights", default="0,0.5,1,2,4", help="anchor weights (0: no anchors)")
    ap.add_argument("--encoder", default="frozen", choices=["frozen", "tuned"])
    ap.add_argument(
        "--train-settings",
        default="{}",
        help='TrainConfig JSON for "tuned", or a JSON list of them (one run each)',
    )
    ap.add_argument("--base", default="minilm", help="registry name or a model folder")
    ap.add_argument("--device", default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--vectors", type=Path, default=None, help="keep/reuse vectors here")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    ap.add_argument("--name", default="descriptions", help="results file name")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    weights = [float(w) for w in args.weights.split(",")]
    parsed = json.loads(args.train_settings)
    variants: list[dict[str, Any]] = parsed if isinstance(parsed, list) else [parsed]
    if args.encoder == "frozen":
        variants = [{}]
    if any(w < 0 for w in weights):
        ap.error("--weights are 0 or more")
    if args.device in (None, "cpu"):
        import torch

        torch.set_num_threads(args.threads)
    results: list[dict[str, Any]] = []
    for ds in args.datasets.split(","):
        te_x, te_y = read_csv(args.data / ds / "test.csv")
        for seed, settings in [(int(s), v) for s in args.seeds.split(",") for v in variants]:
            tr_y = read_csv(args.data / ds / f"train_10shot_seed{seed}.csv")[1]
            started = time.monotonic()
            vecs = encode_cell(ds, seed, args, settings)
            seconds = round(time.monotonic() - started, 1)
            hard = borderline_mask(te_x, te_y, sorted(set(tr_y)))
            cells = [(0, w) for w in weights if w > 0][:1]  # zero-shot: any weight > 0
            cells += [(int(k), w) for k in args.shots.split(",") for w in weights]
            for shots, weight in cells:
                right = accuracy(vecs, tr_y, first_per_intent(tr_y, shots), te_y, weight)
                on_hard = [r for r, h in zip(right, hard, strict=True) if h]
                results.append(
                    {
                        "dataset": ds,
                        "seed": seed,
                        "encoder": args.encoder,
                        "training": settings_tag(settings) if args.encoder == "tuned" else "-",
                        "encode_seconds": seconds,  # training + encoding (0-ish when cached)
                        "shots": "zero-shot" if shots == 0 else str(shots),
                        "anchors": "names" if shots == 0 else f"w={weight:g}",
                        "acc": float(np.mean(right)),
                        "borderline_share": round(float(np.mean(hard)), 4),
                        "acc_borderline": float(np.mean(on_hard)) if on_hard else 0.0,
                    }
                )
                logger.info("%s seed %d %s", ds, seed, results[-1])
            flush(results, args)
    if results:
        print(table(results))
    return 0


def flush(results: list[dict[str, Any]], args: Any) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    payload = {
        "results": results,
        "summary": summarise(results),
        "encoder": args.encoder,
        "threads": args.threads,
    }
    (args.out / f"{args.name}.json").write_text(json.dumps(payload, indent=2))
    (args.out / f"{args.name}.md").write_text(table(results) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
