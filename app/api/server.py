"""The REST API's FastAPI app: the ``/api/v1`` routes, their error answers, the micro-batcher of
one-line predictions, and the OpenAPI docs at ``/docs`` (Swagger UI served from the
``swagger-ui-py`` package: no CDN, the app stays offline). ``serve`` mounts the Gradio UI
under the same app, at ``/``, so both answer on one port."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from app.access import open_project
from app.api import errors, project_routes, queue_routes, routes, settings_routes, team_routes
from app.api.batcher import MicroBatcher
from app.api.gate import ApiGate
from app.services.models.predict import classify_requests
from app.serving.state import ServingState
from storage.errors import StorageError

DOCS_STATIC = "/docs/static"
# Micro-batches of one-line predictions: at most this many requests share one encoder pass
# (the one-line lane of app.serving.admission admits 64 calls at once).
MAX_BATCH = 64


def swagger_ui_files() -> Path:
    """Swagger UI 5's files, from the ``swagger-ui-py`` package (found, not imported: its
    ``__init__`` loads framework handlers the app does not need)."""
    spec = importlib.util.find_spec("swagger_ui")
    if spec is None or spec.origin is None:
        raise RuntimeError("swagger-ui-py is not installed: `pip install intent-studio[app]`.")
    return Path(spec.origin).parent / "static"


def create_api(serving_state: ServingState) -> FastAPI:
    """The API app on ``serving_state`` (the Gradio UI is mounted on it by :func:`app.ui.mount.mount_ui`).

    Example:
        >>> from fastapi.testclient import TestClient  # doctest: +SKIP
        >>> TestClient(create_api(serving_state)).post(  # doctest: +SKIP
        ...     "/api/v1/projects/shop/predict", json={"text": "where is my parcel"}
        ... ).json()["predictions"][0]["labels"]
        ['track_order']
    """
    api = FastAPI(
        title="Intent Studio API",
        version="1",
        summary="Predict, label, list utterances and versions, retrain: the app's actions as JSON.",
        docs_url=None,  # served below, from local files
        redoc_url=None,
    )
    api.state.serving_state = serving_state

    def run(requests: list[Any]) -> list[Any]:
        """One batch of one-line predictions, ``(project, caller, text, k, context)`` each:
        each distinct project is resolved once for each caller (after the caller's place was
        admitted: a refused flood costs no database work), then one encoder pass per project."""
        handles: dict[tuple[str, Any], Any] = {}
        for project, who, *_ in requests:
            key = (project, who)
            if key not in handles:
                try:
                    handles[key] = open_project(serving_state.db, project, who, stamp=True)
                except (StorageError, PermissionError) as exc:  # unknown, or not the caller's
                    handles[key] = exc
        resolved = [(handles[(r[0], r[1])], *r[2:]) for r in requests]
        ok = [i for i, r in enumerate(resolved) if not isinstance(r[0], Exception)]
        answers = classify_requests(serving_state.live, [resolved[i] for i in ok], explained=False)
        out: list[Any] = [r[0] for r in resolved]
        for i, answer in zip(ok, answers, strict=True):
            out[i] = answer
        return out

    api.state.batcher = MicroBatcher(run, max_batch=MAX_BATCH)
    api.add_middleware(
        ApiGate, serving_state=serving_state
    )  # the token, then the body's size, before parsing
    errors.install(api)
    api.include_router(routes.router)
    api.include_router(project_routes.router)
    api.include_router(settings_routes.router)
    api.include_router(team_routes.router)
    api.include_router(queue_routes.router)
    api.include_router(routes.fallback)  # last: any other /api/v1 path
    api.mount(DOCS_STATIC, StaticFiles(directory=swagger_ui_files()), name="docs-static")

    @api.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="Intent Studio API",
            swagger_js_url=f"{DOCS_STATIC}/swagger-ui-bundle.js",
            swagger_css_url=f"{DOCS_STATIC}/swagger-ui.css",
            swagger_favicon_url=f"{DOCS_STATIC}/favicon-32x32.png",
        )

    return api
