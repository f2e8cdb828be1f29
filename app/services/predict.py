"""Predictions explained by their nearest labelled neighbours, from the project's live pool."""

from __future__ import annotations

import time
from typing import Any

from app.context import AppContext
from core.retrieval.explain import explain
from core.retrieval.knn import Prediction
from storage.projects import get_project, list_intents

MAX_BATCH = 1000


def _project_id(ctx: AppContext, project: str) -> int:
    with ctx.db.session() as s:
        return get_project(s, project).id


def _classify(
    ctx: AppContext, project: str, texts: list[str], k: int, show: int
) -> list[tuple[dict[str, Any], Prediction]]:
    """The project's predictor on ``texts``: each public dict with the k-NN prediction behind it."""
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
    return pool.predictor.predict_with_evidence(clean, k=k, show=show)


def predict(
    ctx: AppContext, project: str, texts: list[str], *, k: int = 1, show: int = 5
) -> list[dict[str, Any]]:
    """Classify texts against the project's labelled pool with its active encoder."""
    return [row for row, _ in _classify(ctx, project, texts, k, show)]


def predict_explained(
    ctx: AppContext, project: str, texts: list[str], *, k: int = 1, show: int = 5
) -> list[dict[str, Any]]:
    """Predictions, each with its ``explanation`` (the evidence card: sentence, runner-up
    evidence, margin, borderline diagnostic) and ``latency_ms`` (of the whole call)."""
    started = time.perf_counter()
    results = _classify(ctx, project, texts, k, show)
    with ctx.db.session() as s:
        intents = list_intents(s, get_project(s, project).id)
    names = [i.name for i in intents]
    descriptions = {i.name: i.description for i in intents if i.description}
    latency = round((time.perf_counter() - started) * 1000, 1)
    for row, pred in results:
        row["latency_ms"] = latency
        # single-label out of scope: the k-NN threshold its top intent missed
        missed = row.get("threshold") if row["oos"] and "probabilities" not in row else None
        row["explanation"] = explain(
            row["text"],
            pred,
            intents=names,
            intent_descriptions=descriptions,
            out_of_scope_below=missed,
        ).to_dict()
    return [row for row, _ in results]


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
