"""API-only endpoints (Gradio ``gr.api``): the same service calls as the UI, as plain JSON.

Call them with ``gradio_client`` or ``curl`` (see README)."""

from __future__ import annotations

from typing import Any

import gradio as gr

from app.admission import BusyError
from app.auth import require
from app.context import AppContext
from app.services import data as data_svc
from app.services import predict as predict_svc
from app.services import projects as project_svc


def register_api(ctx: AppContext) -> None:
    """Must be called inside a ``gr.Blocks`` context."""

    def predict(project: list[str], text: list[str], k: list[int]) -> list[list[dict[str, Any]]]:
        """Classify one utterance; returns ranked intents and the neighbours behind them.

        Concurrent calls are micro-batched by Gradio (``batch=True``): one encoder pass serves
        them all, which is what keeps latency flat under many clients on a CPU."""
        results = predict_svc.predict_requests(ctx, list(zip(project, text, k, strict=True)))
        for r in results:
            if "error" in r and len(results) == 1:
                raise gr.Error(r["error"])
        return [results]

    def predict_batch(
        project: str, texts: list[str], k: int = 1, request: gr.Request | None = None
    ) -> list[dict[str, Any]]:
        """Classify many utterances: up to 200 per call for a viewer, 1,000 for a designer or an
        admin, at most 2 calls at once per user; a refusal says why (busy: retry in a moment)."""
        try:  # the limits are the signed-in user's, checked here on the server
            who = require(ctx, getattr(request, "username", None), "viewer")
            return predict_svc.predict(ctx, project, list(texts), k=int(k), who=who)
        except (PermissionError, ValueError, BusyError) as exc:
            raise gr.Error(str(exc)) from exc

    def label(
        project: str,
        text: str,
        intents: list[str],
        split: str = "train",
        request: gr.Request | None = None,
    ) -> dict[str, Any]:
        """Add a labelled utterance, or relabel it when the text is already in the project."""
        try:  # the role is checked here, on the server, for every caller
            who = require(ctx, getattr(request, "username", None), "designer")
        except PermissionError as exc:
            raise gr.Error(str(exc)) from exc
        return data_svc.label_text(ctx, project, text, intents, split, user_id=who.id)

    def projects() -> list[str]:
        """The project names."""
        return project_svc.project_names(ctx)

    def utterances(
        project: str, intent: str = "", split: str = "", search: str = ""
    ) -> list[dict[str, Any]]:
        """The project's utterances with their intents, filtered."""
        return data_svc.table(ctx, project, intent=intent, split=split, search=search)

    gr.api(predict, api_name="predict", batch=True, max_batch_size=64, concurrency_limit=1)
    # More threads than the admission lets batches run at once: the service answers "busy" at
    # once instead of a call waiting unseen in Gradio's queue.
    gr.api(predict_batch, api_name="predict_batch", concurrency_limit=8)
    gr.api(label, api_name="label")
    gr.api(projects, api_name="projects")
    gr.api(utterances, api_name="utterances")
