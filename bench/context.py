"""What encoding the previous turn costs when it says nothing: BANKING77 with a neutral context.

The shared datasets are single turns: no row has a real previous turn, so the gain of context on
real dialogues cannot be measured here (the app's test shows it on a constructed case: "yes
please" after two different questions). What can be measured fairly is the *cost*: the same
questions after a bot turn that carries no information, encoded as the app does
(:func:`core.encoding.previous_turn.with_context`), with the app's decision rule
(:class:`core.retrieval.predictor.Predictor`). Conditions, on the frozen MiniLM:

- ``off``: pool and questions alone (the default).
- ``questions``: the pool alone, each question after the neutral turn (a project that turned
  context on but whose examples were imported without one).
- ``both``: pool and questions after the neutral turn (every row of a chat log has one).

Usage:
    nice -n 10 .venv/bin/python -m bench.context --seed 0
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bench.csvdata import read_csv
from core.retrieval.predictor import TextEncoder

ROOT = Path(__file__).resolve().parents[1]

DATA = ROOT.parent / "shared" / "data" / "banking77"
RESULTS = ROOT / "bench" / "results"
NEUTRAL = ("Hi! How can I help you today?", "Is there anything else I can help you with?")


def accuracy(
    encoder: TextEncoder, pool: list[str], labels: list[str], queries: list[str], gold: list[str]
) -> float:
    """Top-1 accuracy of the app's predictor over ``pool`` on ``queries``."""
    from core.retrieval.factory import PredictorFactory

    predictor = PredictorFactory(encoder).build(pool, labels)
    tops = [r["top"] for r in predictor.predict(queries, show=0, top_n=1)]
    return sum(t == g for t, g in zip(tops, gold, strict=True)) / len(gold)


def main(argv: list[str] | None = None) -> int:
    import torch

    from core.encoding.previous_turn import with_context
    from core.encoding.registry import load_encoder

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seed", type=int, default=0, help="which 10-shot pool (0-2)")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    pool, labels = read_csv(DATA / f"train_10shot_seed{args.seed}.csv")
    queries, gold = read_csv(DATA / "test.csv")
    encoder = load_encoder("minilm", device="cpu")
    results: dict[str, float] = {}
    started = time.perf_counter()
    results["off"] = accuracy(encoder, pool, labels, queries, gold)
    for turn in NEUTRAL:
        asked = [with_context(q, turn) for q in queries]
        results[f"questions after {turn!r}"] = accuracy(encoder, pool, labels, asked, gold)
        both = [with_context(t, turn) for t in pool]
        results[f"both after {turn!r}"] = accuracy(encoder, both, labels, asked, gold)
    for name, acc in results.items():
        print(f"{100 * acc:6.2f}  {name}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"context-seed{args.seed}.json"
    payload = {"seed": args.seed, "seconds": round(time.perf_counter() - started, 1), **results}
    out.write_text(json.dumps(payload, indent=2))
    print(f"JSON: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
