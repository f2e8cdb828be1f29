"""TaDSE on data whose slots are annotated (issue 46 item 1): template filling and the
template-aware loss, measured where the paper claims its gain.

The two options left the retrain after losing 0.3-0.5 points on BANKING77 and CLINC150, with a
slot book derived from a lexicon (``bench/RESULTS.md``). Here the slot book and the templates come
from annotations:

* **ATIS** and **SNIPS** (both in the TaDSE paper) in the ``seq.in`` / ``seq.out`` (BIO slot
  tags) / ``label`` layout of the Slot-Gated SLU release (``--atis DIR`` / ``--snips DIR``:
  folders holding ``train/``, ``test/``); utterances with two intents (``a#b``, ATIS) are left
  out, and test utterances whose intent has no training example.
* **NLU++** (``--nlupp DIR``: the ``nlupp/data`` folder of PolyAI's task-specific-datasets,
  CC-BY-4.0): slot spans of each example; multi-label, scored as exact match of the top intent
  set is not possible with a single-label rule, so only its utterances with exactly one intent
  are used.

Per seed: a ``--shots``-per-intent training sample (per intent, sorted unique texts,
``random.Random(seed).sample``), the rest of the train split unused except by the slot book;
the slot book is, per slot, the ``--top-k`` values annotated most often in the whole train split
(the paper's top-k frequent values; a designer's slot book or Rasa lookup table plays that part);
an intent's templates are its training utterances with their annotated spans replaced by
``{slot}`` (:func:`core.slots.template_of`). Runs, each trained with the retrain's default recipe:
``fast``; ``fill`` (plus ``--fill`` filled templates per intent, added to the training data only:
never to the pool); ``fill+loss`` (plus TaDSE's pairwise utterance-template loss, weight
``--loss``). Accuracy is the app's rule (:func:`core.retrieval.factory.vector_pool`) over the
``--shots`` labelled utterances: filled templates never join the pool.

The product's training loop has no template columns any more; :func:`template_training` adds them
for the length of one training run (this experiment only).

Usage:
    nice -n 10 python -m bench.experiments.tadse --atis /tmp/slu/atis --snips /tmp/slu/snips \\
        --seeds 0,1,2 --json /tmp/tadse.json
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import logging
import random
import re
import statistics
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from bench._common import offline_models

ROOT = Path(__file__).resolve().parents[2]

offline_models()

from core.slots import PLACEHOLDER, EntitySpan, placeholders, template_of  # noqa: E402

logger = logging.getLogger("bench.experiments.tadse")

# Fillings tried per template before giving up on finding new ones (a template with few values).
TRIES_PER_TEMPLATE = 50


@dataclass(frozen=True)
class Example:
    """An utterance, its intent and its annotated slot spans."""

    text: str
    intent: str
    spans: tuple[EntitySpan, ...] = ()

    @property
    def template(self) -> str:
        return template_of(self.text, self.spans) if self.spans else self.text


# ---------------------------------------------------------------- readers
def read_bio(folder: Path) -> list[Example]:
    """``seq.in`` (tokens), ``seq.out`` (BIO tags) and ``label`` of one split; the utterance is
    its tokens joined by spaces, each B-/I- run a span of its slot."""
    words = (folder / "seq.in").read_text(encoding="utf-8").splitlines()
    tags = (folder / "seq.out").read_text(encoding="utf-8").splitlines()
    intents = (folder / "label").read_text(encoding="utf-8").splitlines()
    out = []
    for w, t, y in zip(words, tags, intents, strict=True):
        tokens, bio = w.split(), t.split()
        if len(tokens) != len(bio) or "#" in y:
            continue
        spans: list[EntitySpan] = []
        pos, start, slot = 0, -1, ""
        ends: list[int] = []
        for tok, tag in zip(tokens, bio, strict=True):
            begin = pos
            pos += len(tok)
            ends.append(pos)
            inside = tag.startswith("I-") and slot == tag[2:]
            if not inside and slot:
                spans.append(EntitySpan(start, ends[-2], slot))
                slot = ""
            if tag.startswith(("B-", "I-")) and not inside:
                start, slot = begin, tag[2:]
            pos += 1
        if slot:
            spans.append(EntitySpan(start, ends[-1], slot))
        out.append(Example(" ".join(tokens), y.strip(), tuple(spans)))
    return out


def read_nlupp(folder: Path, domain: str) -> list[Example]:
    """NLU++ examples of ``domain`` with exactly one intent, their slot spans kept."""
    out = []
    for path in sorted((folder / domain).glob("fold*.json")):
        for row in json.loads(path.read_text(encoding="utf-8")):
            intents = sorted(set(row.get("intents") or []))
            if len(intents) != 1:
                continue
            spans = sorted(
                (
                    EntitySpan(int(v["span"][0]), int(v["span"][1]), slot)
                    for slot, v in (row.get("slots") or {}).items()
                    if "span" in v
                ),
                key=lambda s: s.start,
            )
            clean: list[EntitySpan] = []
            for s in spans:  # overlapping annotations: the first wins
                if not clean or s.start >= clean[-1].end:
                    clean.append(s)
            out.append(Example(row["text"], intents[0], tuple(clean)))
    return out


def load(name: str, args: argparse.Namespace) -> tuple[list[Example], list[Example]]:
    """(train, test) examples of a data set."""
    if name in ("atis", "snips"):
        root = Path(getattr(args, name))
        return read_bio(root / "train"), read_bio(root / "test")
    if name.startswith("nlupp-"):
        every = read_nlupp(Path(args.nlupp), name.split("-", 1)[1])
        rng = random.Random(0)
        test_ids = set(rng.sample(range(len(every)), len(every) // 2))
        return (
            [e for i, e in enumerate(every) if i not in test_ids],
            [e for i, e in enumerate(every) if i in test_ids],
        )
    raise SystemExit(f"unknown data set {name!r}")


# ---------------------------------------------------------------- book, templates, filling
def shots(train: Sequence[Example], k: int, seed: int) -> list[Example]:
    """``k`` examples per intent (all of an intent with fewer): per intent (sorted), a seeded
    sample of its sorted unique texts."""
    by: dict[str, dict[str, Example]] = {}
    for e in train:
        by.setdefault(e.intent, {}).setdefault(e.text, e)
    rng = random.Random(seed)
    out = []
    for intent in sorted(by):
        texts = sorted(by[intent])
        out += [by[intent][t] for t in rng.sample(texts, min(k, len(texts)))]
    return out


def slot_book(train: Sequence[Example], top_k: int) -> dict[str, list[str]]:
    """Per slot, the ``top_k`` values annotated most often (ties: alphabetical)."""
    counts: dict[str, Counter[str]] = {}
    for e in train:
        for s in e.spans:
            counts.setdefault(s.entity, Counter())[e.text[s.start : s.end]] += 1
    return {
        slot: [v for v, _ in sorted(c.items(), key=lambda p: (-p[1], p[0]))[:top_k]]
        for slot, c in sorted(counts.items())
    }


@dataclass(frozen=True)
class Filled:
    text: str
    intent: str
    template: str


def fill_templates(
    templates: Mapping[str, Sequence[str]],
    book: Mapping[str, Sequence[str]],
    *,
    per_intent: int,
    seed: int,
    exclude: Sequence[str] = (),
) -> list[Filled]:
    """Up to ``per_intent`` new utterances per intent from its templates, round robin over the
    templates, every combination in a seeded order when there are few, seeded draws otherwise
    (the retrain's ``template_fill`` as it was, commit 3fc6e9e)."""
    made: list[Filled] = []
    taken = set(exclude)
    for intent in sorted(templates):
        rng = random.Random(f"{seed}:{intent}")
        streams = [
            _fillings(t, book, rng)
            for t in sorted(set(templates[intent]))
            if placeholders(t) and all(book.get(n) for n in placeholders(t))
        ]
        mine = 0
        while streams and mine < per_intent:
            for stream in list(streams):
                got = next(stream, None)
                if got is None:
                    streams.remove(stream)
                    continue
                if got[1] in taken:
                    continue
                taken.add(got[1])
                made.append(Filled(got[1], intent, got[0]))
                mine += 1
                if mine >= per_intent:
                    break
    return made


def _fillings(
    template: str, book: Mapping[str, Sequence[str]], rng: random.Random
) -> Iterator[tuple[str, str]]:
    names = sorted(set(placeholders(template)))
    pools = [list(book[n]) for n in names]
    total = 1
    for pool in pools:
        total *= len(pool)
    if total <= TRIES_PER_TEMPLATE:
        combos = list(itertools.product(*pools))
        rng.shuffle(combos)
    else:
        combos = [tuple(rng.choice(p) for p in pools) for _ in range(TRIES_PER_TEMPLATE)]
    for combo in combos:
        values = dict(zip(names, combo, strict=True))
        yield template, PLACEHOLDER.sub(partial(_value, values), template)


def _value(values: Mapping[str, str], match: re.Match[str]) -> str:
    return values[match.group(1)]


@dataclass(frozen=True)
class TemplateData:
    texts: list[str]
    labels: list[tuple[str, ...]]
    templates: dict[str, str] = field(default_factory=dict)  # text -> its template
    filled: int = 0


def template_data(
    labelled: Sequence[Example], book: Mapping[str, Sequence[str]], per_intent: int, seed: int
) -> TemplateData:
    """The labelled utterances plus ``per_intent`` filled ones per intent, and each text's
    template (a labelled utterance's from its annotations, a filled one's the one it came
    from)."""
    templates: dict[str, list[str]] = {}
    pairs: dict[str, str] = {}
    for e in labelled:
        if e.spans:
            templates.setdefault(e.intent, []).append(e.template)
            pairs[e.text] = e.template
    texts = [e.text for e in labelled]
    filled = fill_templates(templates, book, per_intent=per_intent, seed=seed, exclude=texts)
    pairs.update({f.text: f.template for f in filled})
    return TemplateData(
        [*texts, *(f.text for f in filled)],
        [*((e.intent,) for e in labelled), *((f.intent,) for f in filled)],
        pairs,
        len(filled),
    )


# ---------------------------------------------------------------- the loss, for one run
@contextlib.contextmanager
def template_training(templates: Mapping[str, str], weight: float) -> Iterator[None]:
    """While open, the fast recipe's batches carry two more columns (each anchor that has a
    template, and that template) and its loss adds TaDSE's pairwise term on them with
    ``weight`` (``papers/tadse.txt``, L^pair; the removed ``TemplateAwareLoss``)."""
    import torch
    from torch import nn

    import core.training.fit as fit
    import core.training.losses as losses
    from core.training.loop import Batch

    class TemplateAwareLoss(nn.Module):
        def __init__(self, base: Any) -> None:
            super().__init__()
            self.base = base

        def compute_loss_from_embeddings(
            self, embeddings: list[torch.Tensor], labels: torch.Tensor
        ) -> torch.Tensor:
            main: torch.Tensor = self.base.compute_loss_from_embeddings(embeddings[:2], labels)
            if len(embeddings) < 4 or len(embeddings[2]) < 2:
                return main
            pair: torch.Tensor = self.base.compute_loss_from_embeddings(embeddings[2:4], labels)
            return main + weight * pair

    plain_batches, plain_loss = fit._fast_batches, losses.ranking_loss

    def batches(*a: Any, **kw: Any) -> list[Batch]:
        out = []
        for b in plain_batches(*a, **kw):
            mine = [t for t in b.columns[0] if t in templates]
            out.append(Batch([*b.columns, mine, [templates[t] for t in mine]], b.labels))
        return out

    def build(*a: Any, **kw: Any) -> nn.Module:
        return TemplateAwareLoss(plain_loss(*a, **kw))

    fit._fast_batches = batches  # type: ignore[assignment]
    losses.ranking_loss = build  # type: ignore[assignment]
    try:
        yield
    finally:
        fit._fast_batches = plain_batches  # type: ignore[assignment]
        losses.ranking_loss = plain_loss  # type: ignore[assignment]


# ---------------------------------------------------------------- the runs
def run_cell(
    name: str, train: list[Example], test: list[Example], seed: int, args: argparse.Namespace
) -> list[dict[str, Any]]:
    from core.retrieval.factory import vector_pool
    from core.training import TrainConfig, train_encoder

    labelled = shots(train, args.shots, seed)
    intents = {e.intent for e in labelled}
    counts = Counter(e.intent for e in labelled)
    labelled = [e for e in labelled if counts[e.intent] >= 2]  # one example: nothing to pair
    intents = {e.intent for e in labelled}
    test = [e for e in test if e.intent in intents]
    book = slot_book(train, args.top_k)
    data = template_data(labelled, book, args.fill, seed)
    stats = {
        "data": name,
        "seed": seed,
        "train": len(labelled),
        "intents": len(intents),
        "test": len(test),
        "slots": len(book),
        "templated": sum(1 for e in labelled if e.spans),
        "filled": data.filled,
    }
    print(json.dumps(stats), flush=True)
    sx, sy = [e.text for e in labelled], [e.intent for e in labelled]
    tx, ty = [e.text for e in test], np.array([e.intent for e in test])
    runs: dict[str, tuple[list[str], list[tuple[str, ...]], float]] = {
        "fast": (sx, [(y,) for y in sy], 0.0),
        "fill": (data.texts, data.labels, 0.0),
        "fill+loss": (data.texts, data.labels, args.loss),
    }
    rows = []
    for run in args.runs.split(","):
        x, y, weight = runs[run]
        started = time.monotonic()
        hook = template_training(data.templates, weight) if weight else contextlib.nullcontext()
        with hook:
            enc = train_encoder("minilm", x, y, TrainConfig(seed=seed), device=args.device)
        train_s = time.monotonic() - started
        model = enc.encoder()
        pool = np.asarray(model.encode(sx, batch_size=128), dtype=np.float32)
        queries = np.asarray(model.encode(tx, batch_size=128), dtype=np.float32)
        found = vector_pool(pool, sy).tops(queries)
        acc = float(np.mean(np.asarray(found.intents, dtype=object) == ty))
        rows.append({**stats, "run": run, "acc": acc, "train_s": round(train_s, 1)})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--atis", type=Path, default=None, help="Slot-Gated SLU data/atis folder")
    ap.add_argument("--snips", type=Path, default=None, help="Slot-Gated SLU data/snips folder")
    ap.add_argument("--nlupp", type=Path, default=None, help="task-specific-datasets nlupp/data")
    ap.add_argument("--datasets", default="atis,snips")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--shots", type=int, default=10)
    ap.add_argument("--fill", type=int, default=20, help="filled templates per intent")
    ap.add_argument("--loss", type=float, default=0.5, help="template loss weight")
    ap.add_argument("--top-k", type=int, default=10, help="slot-book values per slot")
    ap.add_argument("--runs", default="fast,fill,fill+loss")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    rows: list[dict[str, Any]] = []
    for name in args.datasets.split(","):
        train, test = load(name, args)
        for seed in (int(s) for s in args.seeds.split(",")):
            rows += run_cell(name, train, test, seed, args)
            if args.json:
                args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    print(f"\n{'data':<12} {'run':<10} {'acc % per seed':<22} {'median':>7} {'train s':>8}")
    for name in dict.fromkeys(r["data"] for r in rows):
        for run in dict.fromkeys(r["run"] for r in rows):
            mine = [r for r in rows if r["data"] == name and r["run"] == run]
            if not mine:
                continue
            accs = " / ".join(f"{100 * r['acc']:.1f}" for r in mine)
            med = statistics.median(r["acc"] for r in mine)
            secs = statistics.median(r["train_s"] for r in mine)
            print(f"{name:<12} {run:<10} {accs:<22} {100 * med:>7.1f} {secs:>8.1f}")
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
