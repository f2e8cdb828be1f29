"""Predictions explained by their nearest labelled neighbours, from the project's live pool.

Every call is checked against the caller's limits and admitted (or refused as busy) by
:attr:`app.context.AppContext.admission` before it touches the encoder; ``who`` is the acting
user (by default the one the call runs as, :func:`app.auth.current_actor`)."""

from __future__ import annotations

import time
from typing import Any

from app.admission import BusyError
from app.auth import Actor, current_actor
from app.context import AppContext
from core.retrieval.explain import explain
from core.retrieval.knn import Prediction
from storage.projects import get_project, list_intents


def _project_id(ctx: AppContext, project: str) -> int:
    with ctx.db.session() as s:
        return get_project(s, project).id


def _classify(
    ctx: AppContext,
    project: str,
    texts: list[str],
    k: int,
    show: int,
    who: Actor | None,
    *,
    lines: bool = False,
) -> list[tuple[dict[str, Any], Prediction]]:
    """The project's predictor on ``texts``: each public dict with the k-NN prediction behind it.
    ``lines``: the texts are one-line requests of several callers (the API's micro-batch)."""
    who = who or current_actor()
    clean = [t.strip() for t in texts]
    if not clean or any(not t for t in clean):
        raise ValueError("Type an utterance to classify.")
    ctx.admission.limits.check_call(who.role, clean)
    with ctx.admission.admit(who.name, len(clean), lines=lines):
        pool = ctx.pool(_project_id(ctx, project))
        if len(pool.index) == 0:
            raise ValueError(
                "This project has no labelled training utterances yet: label a few first."
            )
        return pool.predictor.predict_with_evidence(clean, k=k, show=show)


def predict(
    ctx: AppContext,
    project: str,
    texts: list[str],
    *,
    k: int = 1,
    show: int = 5,
    who: Actor | None = None,
) -> list[dict[str, Any]]:
    """Classify texts against the project's labelled pool with its active encoder.

    Raises ValueError for bad input or more texts than ``who``'s role may send in one call, and
    :class:`app.admission.BusyError` when the call would go past the per-user or queue limits."""
    return [row for row, _ in _classify(ctx, project, texts, k, show, who)]


def predict_explained(
    ctx: AppContext,
    project: str,
    texts: list[str],
    *,
    k: int = 1,
    show: int = 5,
    who: Actor | None = None,
    lines: bool = False,
) -> list[dict[str, Any]]:
    """Predictions, each with its ``explanation`` (the evidence card: sentence, runner-up
    evidence, margin, borderline diagnostic) and ``latency_ms`` (of the whole call)."""
    started = time.perf_counter()
    results = _classify(ctx, project, texts, k, show, who, lines=lines)
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
    ctx: AppContext,
    project: str,
    text: str,
    *,
    k: int = 1,
    show: int = 5,
    who: Actor | None = None,
) -> dict[str, Any]:
    """One prediction with its explanation (see :func:`predict_explained`)."""
    return predict_explained(ctx, project, [text], k=k, show=show, who=who)[0]


def classify_requests(
    ctx: AppContext, requests: list[tuple[str, str, int]], *, explained: bool = True
) -> list[dict[str, Any] | Exception]:
    """Many independent ``(project, text, k)`` requests at once (the micro-batch of the Gradio
    ``/predict`` endpoint and of the REST API): one encoder pass per (project, k), admitted as
    one-line calls. A request that fails gets its exception (a busy server: every request gets
    the :class:`BusyError`); the others still get their predictions. ``explained=False``: the
    bare prediction (a bundle's structure), without ``explanation`` and ``latency_ms``."""
    out: list[dict[str, Any] | Exception] = [{} for _ in requests]
    groups: dict[tuple[str, int], list[int]] = {}
    for i, (project, _, k) in enumerate(requests):
        groups.setdefault((project, int(k)), []).append(i)
    for (project, k), idx in groups.items():
        texts = [requests[i][1] for i in idx]
        results: list[dict[str, Any] | Exception]
        try:
            if explained:
                results = [*predict_explained(ctx, project, texts, k=k, lines=True)]
            else:
                rows = _classify(ctx, project, texts, k, 5, None, lines=True)
                results = [row for row, _ in rows]
        except BusyError as busy:
            results = [busy for _ in idx]
        except (ValueError, KeyError) as batch_error:
            if len(idx) == 1:
                results = [batch_error]
            else:  # find the culprit(s): the others still get their answers
                results = [
                    classify_requests(ctx, [requests[i]], explained=explained)[0] for i in idx
                ]
        for i, result in zip(idx, results, strict=True):
            out[i] = result
    return out


def error_message(exc: BaseException) -> str:
    """The user message of a refused request (a KeyError's repr quotes are dropped)."""
    return str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)


def predict_requests(ctx: AppContext, requests: list[tuple[str, str, int]]) -> list[dict[str, Any]]:
    """:func:`classify_requests` with each failure as ``{"error": message}`` alone (the Gradio
    ``/predict`` endpoint's answer)."""
    return [
        {"error": error_message(r)} if isinstance(r, Exception) else r
        for r in classify_requests(ctx, requests)
    ]
