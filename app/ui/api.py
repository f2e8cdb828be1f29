"""API-only endpoints (Gradio ``gr.api``): the same service calls as the UI, as plain JSON.

Call them with ``gradio_client`` or ``curl`` (see README)."""

from __future__ import annotations

from typing import Any

import gradio as gr

from app.auth import require
from app.context import AppContext
from app.services import data as data_svc
from app.services import predict as predict_svc
from app.services import projects as project_svc


def register_api(ctx: AppContext) -> None:
    """Must be called inside a ``gr.Blocks`` context."""

    def predict(project: str, text: str, k: int = 1) -> dict[str, Any]:
        """Classify one utterance; returns ranked intents and the neighbours behind them."""
        return predict_svc.predict_one(ctx, project, text, k=int(k))

    def predict_batch(project: str, texts: list[str], k: int = 1) -> list[dict[str, Any]]:
        """Classify up to 1000 utterances."""
        return predict_svc.predict(ctx, project, list(texts), k=int(k))

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
        existing = [
            r for r in data_svc.table(ctx, project, search=text) if r["text"] == text.strip()
        ]
        if existing:
            return data_svc.label_utterance(
                ctx, project, int(existing[0]["id"]), intents, split=split, user_id=who.id
            )
        return data_svc.add_utterance(ctx, project, text, intents, split, user_id=who.id)

    def projects() -> list[str]:
        """The project names."""
        return project_svc.project_names(ctx)

    def utterances(
        project: str, intent: str = "", split: str = "", search: str = ""
    ) -> list[dict[str, Any]]:
        """The project's utterances with their intents, filtered."""
        return data_svc.table(ctx, project, intent=intent, split=split, search=search)

    gr.api(predict, api_name="predict")
    gr.api(predict_batch, api_name="predict_batch")
    gr.api(label, api_name="label")
    gr.api(projects, api_name="projects")
    gr.api(utterances, api_name="utterances")
