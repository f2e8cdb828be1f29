"""NLU++ multi-label benchmark (Multi-ConvFiT protocol): encoder (frozen / tuned) + MLP head.

Protocol: the 10 ``fold`` groups of ``../shared/data/nlupp/{banking,hotels}.csv`` (``fold`` =
``source_fold // 2``, the paper's 10-fold split). Low data = train on one fold, test on the other
nine; high data = train on nine, test on the held-out one. Scores: micro F1 and exact-match
accuracy at θ = 0.3, mean over the folds run; CPU wall time per fold.

Methods:
    frozen   the encoder as shipped + MLP head (vectors encoded once per domain and encoder;
             the per-fold time includes that encoding).
    lora     LoRA adapter tuning (``TrainConfig(method="lora")``) then the head.
    fast     the app's default recipe (``TrainConfig()``: what a multi-label project's retrain
             runs) then the head.

Usage:
    .venv/bin/python -m bench.multilabel --folds 0 1 2 --methods frozen
    .venv/bin/python -m bench.multilabel --domains hotels --regimes low --methods fast \\
        --folds 0 --tune-epochs 2

ConvFiT Stage 2 on sampled pairs (``convfit``) left the product (bench/RESULTS.md, issue 46).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "nlupp"
RESULTS = ROOT / "bench" / "results"

logger = logging.getLogger(__name__)

# Multi-ConvFiT Table 2a, MPNet sentence encoder + C-FFT: (micro F1, exact match) x 100.
PAPER = {
    ("banking", "low"): (81.9, 49.1),
    ("banking", "high"): (94.3, 80.5),
    ("hotels", "low"): (70.2, 51.1),
    ("hotels", "high"): (93.4, 84.0),
}
METHOD_NAMES = {
    "frozen": "frozen + head",
    "lora": "adapter (LoRA) + head",
    "fast": "default recipe (fast) + head",
}


@dataclass
class Row:
    domain: str
    regime: str
    method: str
    encoder: str
    folds: list[int] = field(default_factory=list)
    f1: list[float] = field(default_factory=list)
    exact: list[float] = field(default_factory=list)
    macro_f1: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    tune_seconds: list[float] = field(default_factory=list)
    f1_pi: list[float] = field(default_factory=list)
    exact_pi: list[float] = field(default_factory=list)
    n_train: list[int] = field(default_factory=list)
    note: str = ""

    def summary(self) -> dict[str, Any]:
        def mean(xs: Sequence[float]) -> float | None:
            return round(float(np.mean(xs)), 4) if xs else None

        paper = PAPER.get((self.domain, self.regime))
        return {
            "domain": self.domain,
            "regime": self.regime,
            "method": self.method,
            "encoder": self.encoder,
            "folds": self.folds,
            "micro_f1": mean(self.f1),
            "exact_match": mean(self.exact),
            "macro_f1": mean(self.macro_f1),
            "per_intent_theta": (
                {"micro_f1": mean(self.f1_pi), "exact_match": mean(self.exact_pi)}
                if self.f1_pi
                else None
            ),
            "seconds_per_fold": mean(self.seconds),
            "tune_seconds_per_fold": mean(self.tune_seconds),
            "n_train_mean": mean([float(n) for n in self.n_train]),
            "per_fold": {
                "micro_f1": [round(x, 4) for x in self.f1],
                "exact_match": [round(x, 4) for x in self.exact],
                "seconds": [round(x, 1) for x in self.seconds],
            },
            "paper_mpnet_cfft": {"micro_f1": paper[0], "exact_match": paper[1]} if paper else None,
            "note": self.note,
        }


def load_domain(data_dir: Path, domain: str) -> tuple[list[str], list[tuple[str, ...]], np.ndarray]:
    """Texts, label tuples (``()`` = no intent) and the 0-9 ``fold`` of every row."""
    import pandas as pd

    df = pd.read_csv(data_dir / f"{domain}.csv", keep_default_na=False)
    texts = df["text"].astype(str).tolist()
    labels = [tuple(s.split("|")) if s else () for s in df["labels"].astype(str)]
    return texts, labels, df["fold"].to_numpy(dtype=int)


def split(folds: np.ndarray, k: int, regime: str) -> tuple[np.ndarray, np.ndarray]:
    """Train and test row indices for fold ``k``: low = train on fold k, high = test on fold k."""
    in_k = folds == k
    train, test = (in_k, ~in_k) if regime == "low" else (~in_k, in_k)
    return np.flatnonzero(train), np.flatnonzero(test)


def available_encoders() -> set[str]:
    from core.encoding.registry import registry

    return set(registry())


def tune(
    method: str,
    encoder: str,
    texts: list[str],
    labels: list[tuple[str, ...]],
    args: argparse.Namespace,
) -> Any:
    """Contrastively specialise ``encoder`` on the training fold; returns a core Encoder.

    Intents with a single example in the fold cannot form a positive pair, and the trainer refuses
    them; they are dropped from the *tuning* labels only (their utterances keep their other labels
    or act as no-intent negatives). The head still learns every intent.
    """
    from collections import Counter

    from core.training import TrainConfig, train_encoder

    counts = Counter(name for lab in labels for name in lab)
    rare = {name for name, c in counts.items() if c < 2}
    if rare:
        logger.info("tuning without %d single-example intents: %s", len(rare), sorted(rare))
        labels = [tuple(n for n in lab if n not in rare) for lab in labels]

    epochs = {"epochs": args.tune_epochs} if args.tune_epochs else {}
    cfg = TrainConfig(method="lora" if method == "lora" else "fast", seed=args.seed, **epochs)
    trained = train_encoder(encoder, texts, labels, cfg, device="cpu")
    logger.info("tuned %s/%s: %s", encoder, method, trained.stats)
    return trained.encoder()


def run(args: argparse.Namespace, on_fold: Callable[[list[Row]], None] | None = None) -> list[Row]:
    """Every (encoder, domain, regime, method) row over ``args.folds``; ``on_fold(rows)`` after
    each fold (the JSON is rewritten then, so a run cut short keeps the folds it finished)."""
    from core.encoding.registry import load_encoder
    from core.multilabel.head import HeadConfig, MultiLabelHead
    from core.multilabel.metrics import multilabel_scores
    from core.multilabel.targets import intents_of
    from core.multilabel.tuning import tune_thresholds

    head_cfg = HeadConfig(
        epochs=args.head_epochs,
        max_steps=args.head_max_steps or None,
        threshold=args.threshold,
        seed=args.seed,
    )
    known = available_encoders()
    rows: list[Row] = []
    for enc_name in args.encoders:
        if enc_name not in known:
            logger.warning("encoder %r is not registered here: skipped", enc_name)
            for domain in args.domains:
                for regime in args.regimes:
                    for method in args.methods:
                        rows.append(
                            Row(domain, regime, method, enc_name, note="encoder not registered")
                        )
            continue
        base = load_encoder(enc_name, device="cpu")
        for domain in args.domains:
            texts, labels, folds = load_domain(args.data, domain)
            intents = intents_of(labels)
            frozen_vecs: np.ndarray | None = None
            encode_s = 0.0
            for regime in args.regimes:
                for method in args.methods:
                    row = Row(domain, regime, method, enc_name)
                    rows.append(row)
                    for k in args.folds:
                        tr, te = split(folds, k, regime)
                        tr_labels = [labels[i] for i in tr]
                        te_labels = [labels[i] for i in te]
                        t0 = time.perf_counter()
                        tune_s = 0.0
                        if method == "frozen":
                            if frozen_vecs is None:
                                frozen_vecs = base.encode(texts, batch_size=128)
                                encode_s = time.perf_counter() - t0
                            vecs = frozen_vecs
                            t0 -= encode_s  # charge the one-off encoding to every fold
                        else:
                            enc = tune(method, enc_name, [texts[i] for i in tr], tr_labels, args)
                            tune_s = time.perf_counter() - t0
                            vecs = enc.encode(texts, batch_size=128)
                        head = MultiLabelHead(head_cfg).fit(vecs[tr], tr_labels, intents)
                        pred = head.predict(vecs[te])
                        scores = multilabel_scores(te_labels, pred)
                        secs = time.perf_counter() - t0
                        row.folds.append(k)
                        row.f1.append(scores["micro_f1"])
                        row.exact.append(scores["exact_match"])
                        row.macro_f1.append(scores["macro_f1"])
                        row.seconds.append(secs)
                        row.tune_seconds.append(tune_s)
                        row.n_train.append(len(tr))
                        if args.per_intent:
                            theta = tune_thresholds(vecs[tr], tr_labels, intents, config=head_cfg)
                            pi = multilabel_scores(te_labels, head.predict(vecs[te], theta))
                            row.f1_pi.append(pi["micro_f1"])
                            row.exact_pi.append(pi["exact_match"])
                            logger.info(
                                "  per-intent θ (5-fold CV on train): F1 %.3f EM %.3f",
                                pi["micro_f1"],
                                pi["exact_match"],
                            )
                        logger.info(
                            "%s %s %s %s fold %d: F1 %.3f EM %.3f (%.1fs, n_train %d)",
                            enc_name,
                            domain,
                            regime,
                            method,
                            k,
                            scores["micro_f1"],
                            scores["exact_match"],
                            secs,
                            len(tr),
                        )
                        if on_fold is not None:
                            on_fold(rows)
    return rows


def table(rows: list[Row]) -> str:
    head = (
        f"{'domain':8} {'regime':6} {'encoder':7} {'method':26} {'folds':9} "
        f"{'F1':>6} {'EM':>6} {'paper':>11} {'s/fold':>8}  per-intent θ F1/EM"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        s = r.summary()
        paper = PAPER.get((r.domain, r.regime))
        paper_s = f"{paper[0]:.1f}/{paper[1]:.1f}" if paper else "-"
        if s["micro_f1"] is None:
            lines.append(
                f"{r.domain:8} {r.regime:6} {r.encoder:7} {METHOD_NAMES[r.method]:26} "
                f"skipped: {r.note}"
            )
            continue
        folds = ",".join(str(k) for k in r.folds)
        lines.append(
            f"{r.domain:8} {r.regime:6} {r.encoder:7} {METHOD_NAMES[r.method]:26} {folds:9} "
            f"{100 * s['micro_f1']:6.1f} {100 * s['exact_match']:6.1f} {paper_s:>11} "
            f"{s['seconds_per_fold']:8.1f}"
            + (
                f"  {100 * s['per_intent_theta']['micro_f1']:.1f}/"
                f"{100 * s['per_intent_theta']['exact_match']:.1f}"
                if s["per_intent_theta"]
                else ""
            )
        )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder with the NLU++ CSVs")
    p.add_argument(
        "--domains", nargs="+", default=["banking", "hotels"], choices=["banking", "hotels"]
    )
    p.add_argument("--regimes", nargs="+", default=["low", "high"], choices=["low", "high"])
    p.add_argument("--folds", nargs="+", type=int, default=list(range(10)), help="0-9")
    p.add_argument("--methods", nargs="+", default=["frozen", "fast"], choices=list(METHOD_NAMES))
    p.add_argument("--encoders", nargs="+", default=["minilm", "mpnet"])
    p.add_argument("--head-epochs", type=int, default=None, help="default: HeadConfig's (600)")
    p.add_argument(
        "--head-max-steps", type=int, default=None, help="default: HeadConfig's (6000; 0 = no cap)"
    )
    p.add_argument("--threshold", type=float, default=0.3)
    p.add_argument("--tune-epochs", type=int, default=None, help="passes (None = the default)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--per-intent",
        action="store_true",
        help="also score per-intent θs tuned by 5-fold CV on the training fold (not timed)",
    )
    p.add_argument(
        "--threads", type=int, default=1, help="torch CPU threads (1: fastest on a shared CPU)"
    )
    p.add_argument(
        "--json", type=Path, default=None, help="default: bench/results/multilabel-<t>.json"
    )
    args = p.parse_args(argv)
    if any(not 0 <= k <= 9 for k in args.folds):
        p.error("folds are 0-9")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    import torch

    from core.multilabel.head import HeadConfig

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    args = parse_args(argv)
    if args.head_epochs is None:
        args.head_epochs = HeadConfig().epochs
    if args.head_max_steps is None:
        args.head_max_steps = HeadConfig().max_steps or 0
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    out = args.json or RESULTS / f"multilabel-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)

    def save(rows: list[Row]) -> None:
        out.write_text(json.dumps(payload(args, rows, time.perf_counter() - t0), indent=2))

    rows = run(args, on_fold=save)
    save(rows)
    print(table(rows))
    print(f"\nJSON: {out}")
    return 0


def payload(args: argparse.Namespace, rows: list[Row], seconds: float) -> dict[str, Any]:
    return {
        "protocol": "NLU++ 10-fold (fold = source_fold // 2); low: train 1 / test 9; high: reverse",
        "threshold": args.threshold,
        "head_epochs": args.head_epochs,
        "head_max_steps": args.head_max_steps or None,
        "tune_epochs": args.tune_epochs,
        "threads": args.threads,
        "seed": args.seed,
        "per_intent_thresholds": args.per_intent,
        "total_seconds": round(seconds, 1),
        "rows": [r.summary() for r in rows],
    }


if __name__ == "__main__":
    raise SystemExit(main())
