"""API-only endpoints (Gradio ``gr.api``): the same service calls as the UI, as plain JSON.

Call them with ``gradio_client`` or ``curl`` (see docs/rest.md). Each declares its action of the
permissions table (:func:`app.ui.guard.guarded`, as every event of the page does) and takes its
project as a :class:`ProjectHandle`: the guard resolves the name for the caller before the
endpoint runs, so a project they are no member of answers exactly as one that does not exist
("No project 'x'."), and every refusal is the call's error, in the app's words (issue 64)."""

from __future__ import annotations

from typing import Any

import gradio as gr

from app.access import ProjectHandle, open_project
from app.access.actions import LABEL, READ
from app.services.labelling import data as data_svc
from app.services.models import predict as predict_svc
from app.services.projects import projects as project_svc
from app.serving.state import ServingState
from app.ui.guard import guarded, refuse
from storage.errors import StorageError


def register_api(serving_state: ServingState) -> None:
    """Must be called inside a ``gr.Blocks`` context."""

    def predict(project: list[str], text: list[str], k: list[int]) -> list[list[dict[str, Any]]]:
        """Classify one utterance; returns ranked intents and the neighbours behind them.

        Concurrent calls are micro-batched by Gradio (``batch=True``): one encoder pass serves
        them all, which is what keeps latency flat under many clients on a CPU. (Single-user
        mode: one batch serves several callers, so it is only offered where everyone is the
        local user; behind a login each call is its own, for its caller.)"""
        requests: list[Any] = []
        refused: dict[int, dict[str, Any]] = {}
        handles: dict[str, Any] = {}
        for i, (name, t, n) in enumerate(zip(project, text, k, strict=True)):
            try:
                name = str(name)
                p = handles.get(name) or handles.setdefault(
                    name, open_project(serving_state.db, name)
                )
                requests.append((p, t, n))
            except StorageError as exc:
                refused[i] = {"error": str(exc)}
        answers = iter(predict_svc.predict_requests(serving_state.live, requests))
        results = [refused[i] if i in refused else next(answers) for i in range(len(project))]
        for r in results:
            if "error" in r and len(results) == 1:
                refuse(r["error"])
        return [results]

    @guarded(READ)
    def predict_one(project: ProjectHandle, text: str, k: int = 1) -> dict[str, Any]:
        """Classify one utterance (behind a login: the caller's own call)."""
        (result,) = predict_svc.predict_requests(serving_state.live, [(project, text, k)])
        if "error" in result:
            refuse(result["error"])
        return result

    @guarded(READ)
    def predict_batch(project: ProjectHandle, texts: list[str], k: int = 1) -> list[dict[str, Any]]:
        """Classify many utterances: up to 200 per call for a viewer, 1,000 for a designer or an
        admin, at most 2 calls at once per user; a refusal says why (busy: retry in a moment)."""
        if not isinstance(texts, list):
            refuse("`texts` is a list of utterances.")
        # the limits are the signed-in user's (the acting user), checked here on the server
        return predict_svc.predict(serving_state.live, project, [str(t) for t in texts], k=k)

    @guarded(LABEL)
    def label(
        project: ProjectHandle,
        text: str,
        intents: list[str],
        split: str = "train",
        create: bool = False,
    ) -> dict[str, Any]:
        """Add a labelled utterance, or relabel it when the text is already in the project. An
        intent the project does not have is refused (naming the closest) unless ``create``."""
        return data_svc.label_text(
            serving_state.db, project, text, intents, split, create=bool(create)
        )

    def projects() -> list[str]:
        """The names of the projects the caller sees."""
        return project_svc.project_names(serving_state.db)

    @guarded(READ)
    def utterances(
        project: ProjectHandle, intent: str = "", split: str = "", search: str = ""
    ) -> list[dict[str, Any]]:
        """The project's utterances with their intents, filtered."""
        return data_svc.table(serving_state.db, project, intent=intent, split=split, search=search)

    if serving_state.settings.multi_user:
        gr.api(predict_one, api_name="predict", concurrency_limit=8)
    else:
        gr.api(predict, api_name="predict", batch=True, max_batch_size=64, concurrency_limit=1)
    # More threads than the admission lets batches run at once: the service answers "busy" at
    # once instead of a call waiting unseen in Gradio's queue.
    gr.api(predict_batch, api_name="predict_batch", concurrency_limit=8)
    gr.api(label, api_name="label")
    gr.api(projects, api_name="projects")
    gr.api(utterances, api_name="utterances")
