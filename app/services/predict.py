"""Predictions explained by their nearest labelled neighbours, from the project's live pool."""

from __future__ import annotations

import time
from typing import Any

from app.context import AppContext
from app.services import multilabel
from app.services.evaluation import is_multi_label
from core.bundle.reader import prediction_to_dict
from core.multilabel.head import MultiLabelHead
from core.retrieval.explain import explain
from core.retrieval.knn import Prediction
from storage.projects import get_project, list_intents
from storage.tables import ModelVersion

MAX_BATCH = 1000


def _project_id(ctx: AppContext, project: str) -> int:
    with ctx.db.session() as s:
        return get_project(s, project).id


def _classify(
    ctx: AppContext, project: str, texts: list[str], k: int, show: int
) -> tuple[list[str], list[dict[str, Any]], list[Prediction]]:
    """Predictions as the public dicts (with the head's decision for a multi-label model), and the
    raw k-NN predictions behind them."""
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
    rows = [prediction_to_dict(t, p, multi_label=multi) for t, p in zip(clean, preds, strict=True)]
    head = _head(ctx, pool.model_version_id) if multi else None
    if head is not None:
        multilabel.apply_head(rows, head, vectors)
    return clean, rows, preds


def _head(ctx: AppContext, version_id: int | None) -> MultiLabelHead | None:
    if version_id is None:
        return None
    with ctx.db.session() as s:
        mv = s.get(ModelVersion, version_id)
        if mv is None or not mv.artifact_path:
            return None
        folder, sha = ctx.artifacts.path(mv.artifact_path), mv.artifact_sha256
    return multilabel.version_head(folder, sha)


def predict(
    ctx: AppContext, project: str, texts: list[str], *, k: int = 1, show: int = 5
) -> list[dict[str, Any]]:
    """Classify texts against the project's labelled pool with its active encoder."""
    return _classify(ctx, project, texts, k, show)[1]


def predict_explained(
    ctx: AppContext, project: str, texts: list[str], *, k: int = 1, show: int = 5
) -> list[dict[str, Any]]:
    """Predictions, each with its ``explanation`` (the evidence card: sentence, runner-up
    evidence, margin, borderline diagnostic) and ``latency_ms`` (of the whole call)."""
    started = time.perf_counter()
    clean, rows, preds = _classify(ctx, project, texts, k, show)
    with ctx.db.session() as s:
        intents = list_intents(s, get_project(s, project).id)
    names = [i.name for i in intents]
    descriptions = {i.name: i.description for i in intents if i.description}
    latency = round((time.perf_counter() - started) * 1000, 1)
    for text, row, pred in zip(clean, rows, preds, strict=True):
        row["latency_ms"] = latency
        row["explanation"] = explain(
            text, pred, intents=names, intent_descriptions=descriptions
        ).to_dict()
    return rows


def predict_one(
    ctx: AppContext, project: str, text: str, *, k: int = 1, show: int = 5
) -> dict[str, Any]:
    """One prediction with its explanation (see :func:`predict_explained`)."""
    return predict_explained(ctx, project, [text], k=k, show=show)[0]


def predict_requests(ctx: AppContext, requests: list[tuple[str, str, int]]) -> list[dict[str, Any]]:
    """Many independent ``(project, text, k)`` requests at once (the API's micro-batch): one
    encoder pass per (project, k). A request that fails gets ``{"error": message}`` alone."""
    out: list[dict[str, Any]] = [{} for _ in requests]
    groups: dict[tuple[str, int], list[int]] = {}
    for i, (project, _, k) in enumerate(requests):
        groups.setdefault((project, int(k)), []).append(i)
    for (project, k), idx in groups.items():
        try:
            results = predict_explained(ctx, project, [requests[i][1] for i in idx], k=k)
        except (ValueError, KeyError) as batch_error:
            if len(idx) == 1:
                msg = batch_error.args[0] if batch_error.args else str(batch_error)
                results = [{"error": str(msg)}]
            else:  # find the culprit(s): the others still get their answers
                results = [predict_requests(ctx, [requests[i]])[0] for i in idx]
        for i, result in zip(idx, results, strict=True):
            out[i] = result
    return out
