"""Predictions explained by their nearest labelled neighbours, from the project's live pool."""

from __future__ import annotations

import time
from typing import Any

from app.context import AppContext
from app.services.evaluation import is_multi_label
from core.bundle import prediction_to_dict
from storage.projects import get_project

MAX_BATCH = 1000


def _project_id(ctx: AppContext, project: str) -> int:
    with ctx.db.session() as s:
        return get_project(s, project).id


def predict(
    ctx: AppContext, project: str, texts: list[str], *, k: int = 1, show: int = 5
) -> list[dict[str, Any]]:
    """Classify texts against the project's labelled pool with its active encoder."""
    clean = [t.strip() for t in texts]
    if not clean or any(not t for t in clean):
        raise ValueError("Type an utterance to classify.")
    if len(clean) > MAX_BATCH:
        raise ValueError(f"At most {MAX_BATCH} utterances per call.")
    if any(len(t) > 2000 for t in clean):
        raise ValueError("An utterance is longer than 2000 characters.")
    pool = ctx.pool(_project_id(ctx, project))
    if len(pool.index) == 0:
        raise ValueError("This project has no labelled training utterances yet: label a few first.")
    vectors = pool.encoder.encode(clean)
    preds = pool.index.classify(vectors, k=k, show=show)
    multi = is_multi_label([labels for _, labels in pool.items.values()])
    return [prediction_to_dict(t, p, multi_label=multi) for t, p in zip(clean, preds, strict=True)]


def predict_one(
    ctx: AppContext, project: str, text: str, *, k: int = 1, show: int = 5
) -> dict[str, Any]:
    started = time.perf_counter()
    out = predict(ctx, project, [text], k=k, show=show)[0]
    out["latency_ms"] = round((time.perf_counter() - started) * 1000, 1)
    return out
