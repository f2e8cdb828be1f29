"""A frozen multi-label project as the app serves it: NLU++ imported into a real project (SQLite,
embedding cache, live pool), its test rows predicted through ``predict`` before and after the
pool's head is fitted in the background (:mod:`app.serving.pool_heads`), and the live evaluation of the
frozen base (what the Train tab records) beside them.

Regime ``high`` of ``bench/multilabel.py``: train on nine ``fold`` groups, test on the tenth. A
text that appears twice in a domain is imported once (the app refuses duplicates), so the rows
differ slightly from ``bench/multilabel.py``'s.

Usage:
    .venv/bin/python -m bench.multilabel_live --folds 0 1 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.multilabel_knn import DEFAULT_DATA, ROOT, read


def run(rows: list[tuple[str, tuple[str, ...], int]], fold: int) -> dict[str, Any]:
    from app.access import open_project
    from app.config import load_settings
    from app.services.models import evaluation as eval_svc
    from app.services.models import predict as predict_svc
    from app.services.projects import projects as project_svc
    from app.serving.state import ServingState
    from storage.imports import import_rows
    from storage.projects import get_project
    from storage.utterances import NewUtterance

    first = {r[0]: r for r in reversed(rows)}  # a text's first row (the app refuses repeats)
    rows = [r for r in rows if first[r[0]] is r]
    with tempfile.TemporaryDirectory(prefix="multilabel-live-") as tmp:
        ctx = ServingState.open(load_settings(Path(tmp) / "data"))
        try:
            project_svc.new_project(ctx.db, "nlupp")
            with ctx.db.write() as s:
                pid = get_project(s, "nlupp").id
                import_rows(
                    s,
                    pid,
                    [
                        NewUtterance(t, labels, "test" if f == fold else "train")
                        for t, labels, f in rows
                    ],
                )
            test = [(t, set(labels)) for t, labels, f in rows if f == fold]
            texts = [t for t, _ in test]

            def exact() -> float:
                got = predict_svc.predict(ctx.live, open_project(ctx.db, "nlupp"), texts)
                hits = [set(r["labels"]) == gold for r, (_, gold) in zip(got, test, strict=True)]
                return round(100 * sum(hits) / len(hits), 1)

            ctx.live.heads.delay = 3600.0  # the pool as it serves before its head lands
            ctx.live.pool(pid)
            before = exact()
            ctx.live.heads.delay = 0.0
            started = time.monotonic()
            ctx.live.heads.request(pid)
            ctx.live.heads.settle(timeout=1800)
            fit_s = round(time.monotonic() - started, 1)
            after = exact()
            evaluated = eval_svc.live_evaluation(ctx.factories, open_project(ctx.db, "nlupp"))
        finally:
            ctx.close()
    return {
        "train": len(rows) - len(test),
        "test": len(test),
        "no_head_exact": before,
        "head_exact": after,
        "evaluation_exact": round(100 * float(evaluated.exact_match or 0.0), 1),
        "evaluation_micro_f1": round(100 * float(evaluated.micro_f1 or 0.0), 1),
        "head_fit_s": fit_s,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--domains", nargs="+", default=["banking", "hotels"])
    ap.add_argument("--folds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "multilabel_live.json")
    args = ap.parse_args(argv)
    results: list[dict[str, Any]] = []
    for domain in args.domains:
        rows = read(args.data / f"{domain}.csv")
        for fold in args.folds:
            row = {"domain": domain, "fold": fold, **run(rows, fold)}
            results.append(row)
            print(json.dumps(row), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(
        "\n| domain | folds | live exact, no head | live exact, head | evaluation exact / micro-F1 | head fit s |"
    )
    print("|---|---|---|---|---|---|")
    for domain in args.domains:
        got = [r for r in results if r["domain"] == domain]

        def mean(key: str, got: list[dict[str, Any]] = got) -> float:
            return round(statistics.mean(r[key] for r in got), 1)

        print(
            f"| {domain} | {','.join(str(r['fold']) for r in got)} | {mean('no_head_exact')} | "
            f"{mean('head_exact')} | {mean('evaluation_exact')} / {mean('evaluation_micro_f1')} | "
            f"{mean('head_fit_s')} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
