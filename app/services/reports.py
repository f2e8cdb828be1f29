"""The stakeholder report of a project's active model: gathers the numbers, maps and evidence
from the other services and hands plain data to :mod:`app.report`, which renders it."""

from __future__ import annotations

import re
import time
from pathlib import Path

from app.context import AppContext
from app.report import ReportData, write_report
from app.services import maps as map_svc
from app.services.evaluation import live_evaluation, test_predictions
from app.services.versions import ACTIVE, BASE
from storage.datasets import snapshot
from storage.projects import get_project

EVIDENCE_CARDS = 6


def _evidence_ids(ctx: AppContext, project: str) -> list[int]:
    """Half the cards from the hardest test cases (wrong or closest calls), half from clear hits."""
    _, preds = test_predictions(ctx, project, ACTIVE)
    hard = sorted(preds, key=lambda p: (p.correct, p.margin))[: EVIDENCE_CARDS // 2]
    easy = sorted((p for p in preds if p.correct), key=lambda p: -p.margin)
    chosen = [p.id for p in hard]
    chosen += [p.id for p in easy if p.id not in chosen][: EVIDENCE_CARDS - len(chosen)]
    return chosen


def build_report(ctx: AppContext, project: str, out_dir: Path | None = None) -> Path:
    """Write the report HTML file and return its path.

    Maps use the cached UMAP projection when there is one, else PCA (instant), so the button
    never waits for a projection to compile.
    """
    with ctx.db.session() as s:
        p = get_project(s, project)
        version = f"v{p.active_model_version_id}" if p.active_model_version_id else "frozen base"
        dataset_hash = snapshot(s, p.id).content_hash
    after = live_evaluation(ctx, project, ACTIVE)
    before = live_evaluation(ctx, project, BASE)
    views = [map_svc.get_map(ctx, project, method="umap", version=v) for v in (BASE, ACTIVE)]
    if any(v is None for v in views):
        views = [map_svc.compute_map(ctx, project, method="pca", version=v) for v in (BASE, ACTIVE)]
    map_before, map_after = views
    assert map_before is not None and map_after is not None
    evidence = [map_svc.explain_utterance(ctx, project, i) for i in _evidence_ids(ctx, project)]
    data = ReportData(
        project=project,
        model_version=version,
        dataset_hash=dataset_hash[:16],
        metrics={k: after[k] for k in ("accuracy", "macro_f1")} | map_after.metrics,
        baseline_metrics={k: before[k] for k in ("accuracy", "macro_f1")} | map_before.metrics,
        per_intent_f1={k: v["f1"] for k, v in after["per_intent"].items() if v["support"]},
        confusion_labels=after["confusion"]["labels"],
        confusion_matrix=after["confusion"]["matrix"],
        map_before=map_before.map_data(),
        map_after=map_after.map_data(),
        space_before=map_before.metrics,
        space_after=map_after.metrics,
        evidence=evidence,
        notes=f"Evaluated on the project's {after['n']} held-out test utterances with the "
        "nearest-neighbour rule the app uses to predict.",
    )
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", project).strip("-") or "project"
    folder = out_dir or ctx.settings.data_dir / "reports"
    path = folder / f"{safe}-{version.replace(' ', '-')}-{time.strftime('%Y%m%d-%H%M%S')}.html"
    return write_report(data, path)
