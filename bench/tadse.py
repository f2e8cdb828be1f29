"""TaDSE options (issue 15, item 3) on data without slot annotations: as fair a test as we can build.

BANKING77 and CLINC150 carry no slots, so the slot book and the templates are derived, and only
from the 10-shot *training* file: a small hand-written lexicon of generic values (currencies,
card brands, countries, cities, languages, weekdays, months, time words; :data:`LEXICON`,
written from general knowledge, never from the test files) plus the numbers found in the training
utterances. The book holds, per slot, the ``--top-k`` lexicon values most frequent in the
training utterances (the paper's top-k rule); an intent's templates are its training utterances
with a known value masked as ``{slot}`` (:func:`core.slots.compress`). The test split is only
scored. Because the values come from a lexicon and not from annotators, this is a *weak* slot
book (the paper's CLINC150 setting, "a noisy slot book"), so a null result says little about
annotated data such as Rasa projects.

Rows (one seed each unless ``--seeds``):

- ``fast``: the default recipe on the 10-shot file;
- ``fill``: plus ``template_fill`` filled templates per intent;
- ``fill+loss``: plus the template-aware loss (``template_loss``);
- ``… +comp λ``: semantic compression at inference on that row's encoder:
  repr = λ·enc(template) + (1 − λ)·enc(utterance) for pool and queries alike.

``--only-templated`` keeps the intents that got templates (train and test alike): a smaller run
that asks whether TaDSE helps where it has something to work with.

Accuracy is the pool rule (:func:`core.evaluation.scoring.knn_predict`) over the 10-shot
utterances only: filled templates never join the pool.

Usage:
    nice -n 10 python -m bench.tadse --dataset banking77 --seeds 0 --device cpu
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.csvdata import read_csv  # noqa: E402  (needs ROOT on the path)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# Generic values, comma-separated ("may" and "march" are left out: far more often verbs).
_LEXICON = {
    "currency": "euro,euros,dollar,dollars,pound,pounds,usd,eur,gbp,yen,franc,francs,rupee,"
    "rupees,peso,pesos,yuan,bitcoin",
    "card_brand": "visa,mastercard,amex,american express,maestro",
    "country": "usa,america,uk,england,france,germany,spain,italy,china,japan,india,mexico,"
    "canada,brazil,australia,russia,turkey,egypt,thailand,greece,portugal,ireland,netherlands,"
    "switzerland,sweden,norway,poland",
    "city": "london,paris,berlin,rome,madrid,tokyo,beijing,chicago,boston,seattle,miami,dallas,"
    "denver,atlanta,toronto,vancouver,sydney,dubai,moscow,new york,los angeles,san francisco",
    "language": "english,spanish,french,german,italian,chinese,japanese,russian,portuguese,"
    "arabic,hindi,korean,dutch",
    "weekday": "monday,tuesday,wednesday,thursday,friday,saturday,sunday,weekend",
    "month": "january,february,april,june,july,august,september,october,november,december",
    "time": "today,tomorrow,yesterday,tonight,last week,next week,this week",
}
LEXICON: dict[str, list[str]] = {slot: v.split(",") for slot, v in _LEXICON.items()}
NUMBER = re.compile(r"(?<!\w)\d+(?:[.,]\d+)?(?!\w)")


def slot_book(texts: list[str], top_k: int) -> dict[str, list[str]]:
    """Per slot, the ``top_k`` lexicon values (and numbers) most frequent in ``texts``."""
    lowered = [t.lower() for t in texts]
    book: dict[str, list[str]] = {}
    for slot, values in LEXICON.items():
        counts = Counter(
            {
                v: sum(1 for t in lowered if re.search(rf"(?<!\w){re.escape(v)}(?!\w)", t))
                for v in values
            }
        )
        found = [v for v, n in counts.most_common(top_k) if n]
        if found:
            book[slot] = found
    numbers = Counter(m for t in texts for m in NUMBER.findall(t))
    if numbers:
        book["number"] = [v for v, _ in numbers.most_common(top_k)]
    return book


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--dataset", default="banking77")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--fill", type=int, default=20, help="template_fill per intent")
    ap.add_argument("--loss", type=float, default=0.5, help="template_loss weight")
    ap.add_argument("--top-k", type=int, default=10, help="slot-book values per slot")
    ap.add_argument("--lambdas", default="0.1,0.2", help="semantic compression λ values")
    ap.add_argument(
        "--only-templated",
        action="store_true",
        help="train and test on the intents that got templates only (a smaller, faster run)",
    )
    ap.add_argument("--device", default=None)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "tadse.json")
    args = ap.parse_args(argv)
    from core.encoding.registry import Encoder
    from core.evaluation.scoring import knn_predict
    from core.retrieval.factory import vector_pool
    from core.slots import compress, compressed_vectors
    from core.training import TrainConfig, train_encoder
    from core.training.templates import template_training_data

    te_x, te_y = read_csv(args.data / args.dataset / "test.csv")
    lambdas = [float(v) for v in args.lambdas.split(",") if v]

    def vectors(
        enc: Encoder, texts: list[str], book: dict[str, list[str]], lam: float
    ) -> np.ndarray:
        return compressed_vectors(lambda ts: enc.encode(ts, batch_size=256), texts, book, lam)

    rows: list[dict[str, Any]] = []
    for seed in (int(s) for s in args.seeds.split(",")):
        sx, sy = read_csv(args.data / args.dataset / f"train_10shot_seed{seed}.csv")
        book = slot_book(sx, args.top_k)
        templates: dict[str, list[str]] = {}
        for text, label in zip(sx, sy, strict=True):
            masked = compress(text, book)
            if masked != text:
                templates.setdefault(label, []).append(masked)
        tx, ty = te_x, te_y
        if args.only_templated:
            keep = set(templates)
            sx, sy = (
                [x for x, y in zip(sx, sy, strict=True) if y in keep],
                [y for y in sy if y in keep],
            )
            tx, ty = (
                [x for x, y in zip(te_x, te_y, strict=True) if y in keep],
                [y for y in te_y if y in keep],
            )
        data = template_training_data(
            sx, [(y,) for y in sy], templates, book, per_intent=args.fill, seed=seed
        )
        stats = {
            "slots": {k: len(v) for k, v in book.items()},
            "intents_with_templates": len(templates),
            "templates": sum(len(v) for v in templates.values()),
            "filled": data.filled,
            "paired": len(data.templates),
        }
        stats.update(train=len(sx), test=len(tx), intents=len(set(sy)))
        print(json.dumps({"seed": seed, **stats}), flush=True)
        runs: dict[str, tuple[list[str], list[tuple[str, ...]], TrainConfig]] = {
            "fast": (sx, [(y,) for y in sy], TrainConfig(seed=seed)),
            "fill": (data.texts, data.labels, TrainConfig(seed=seed, template_fill=args.fill)),
            "fill+loss": (
                data.texts,
                data.labels,
                TrainConfig(seed=seed, template_fill=args.fill, template_loss=args.loss),
            ),
        }
        for name, (x, y, cfg) in runs.items():
            started = time.monotonic()
            enc = train_encoder(
                "minilm", x, y, cfg, device=args.device, templates=data.templates
            ).encoder()
            train_s = time.monotonic() - started
            for lam in [0.0, *lambdas]:
                pool = vectors(enc, sx, book, lam)
                pred = knn_predict(vector_pool(pool, sy), vectors(enc, tx, book, lam))
                acc = float(np.mean(np.asarray(pred) == np.asarray(ty)))
                label = name if not lam else f"{name} +comp {lam}"
                rows.append({"seed": seed, "run": label, "acc": acc, "train_s": train_s})
                print(json.dumps(rows[-1]), flush=True)
    print(f"\n{args.dataset} 10-shot, median over seeds {args.seeds}")
    print(f"{'run':<24} {'accuracy':>9} {'train s':>8}")
    summary = []
    for run in dict.fromkeys(r["run"] for r in rows):
        mine = [r for r in rows if r["run"] == run]
        acc = statistics.median(r["acc"] for r in mine)
        secs = statistics.median(r["train_s"] for r in mine)
        summary.append({"run": run, "acc": acc, "train_s": secs})
        print(f"{run:<24} {acc:>9.4f} {secs:>8.1f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rows": rows, "summary": summary}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
