"""The REST routes of a team's daily work beyond predicting and labelling one text (under
``/api/v1``, beside :data:`app.api.routes.router`): projects, a bulk label with its preview and
undo, activating, pinning and pruning versions, an export; and the health and readiness checks for load balancers and
containers.

| route | role |
|---|---|
| ``GET /health`` | none (no token) |
| ``GET /ready`` | none (no token) |
| ``GET /projects`` | viewer |
| ``POST /projects`` | admin |
| ``GET /projects/{project}/export?format=`` | designer |
| ``POST /projects/{project}/label/bulk`` | designer |
| ``GET /projects/{project}/batches`` | viewer |
| ``POST /projects/{project}/undo`` | designer |
| ``POST /projects/{project}/versions/{version}/activate`` | designer |
| ``PUT /projects/{project}/versions/{version}/pin`` | designer |
| ``DELETE /projects/{project}/versions/{version}/pin`` | designer |
| ``DELETE /projects/{project}/versions/{version}/files`` | designer |
| ``POST /projects/{project}/versions/prune`` | designer |
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse, JSONResponse

from app.access import open_project
from app.access.auth import acting_as
from app.api import models, version_models
from app.api.errors import ERROR_RESPONSES, PREFIX, RETRY_AFTER_S
from app.api.files import NOTE_HEADER, file_download
from app.api.security import (
    Creator,
    Editor,
    Exporter,
    Reader,
    Training,
    Undoer,
    Viewer,
    context,
)
from app.services.labelling import bulk as bulk_svc
from app.services.labelling import history
from app.services.labelling.bulk import BulkPlan
from app.services.models import version_files
from app.services.models import versions as versions_svc
from app.services.projects import export as export_svc
from app.services.projects import projects as project_svc
from storage.ids import parse_id

router = APIRouter(prefix=PREFIX, responses=ERROR_RESPONSES)

BASE = "base"  # the version path segment that means the frozen base encoder


@router.get(
    "/health",
    response_model=models.HealthOut,
    summary="Whether every server the app uses answers (200, else 503 naming which does not); "
    "needs no token",
)
def health(request: Request) -> Any:
    h = context(request).readiness.health()
    body = {
        "ok": not h.down,
        "ready": h.ready,
        "state": h.state,
        "dependencies": {name: problem or "up" for name, problem in h.dependencies.items()},
        "down": h.down,
    }
    return _health(body, failing=bool(h.down))


@router.get(
    "/ready",
    response_model=models.ReadyOut,
    summary="Whether a request sent here is served now: warm, not stopping, its database "
    "answers (200, else 503); for load balancers and the container's healthcheck; needs no token",
)
def ready(request: Request) -> Any:
    h = context(request).readiness.health()
    body = {"ready": h.ready, "state": h.state, "down": h.down}
    return _health(body, failing=not h.ready)


def _health(body: dict[str, Any], *, failing: bool) -> JSONResponse:
    """``body`` with 200, or when ``failing`` with 503 and when to ask again."""
    retry = {"Retry-After": str(RETRY_AFTER_S)} if failing else None
    return JSONResponse(body, status_code=503 if failing else 200, headers=retry)


def _project(summary: project_svc.ProjectSummary) -> dict[str, Any]:
    fields = set(models.Project.model_fields) - {"active_version"}
    row = {name: getattr(summary, name) for name in fields}
    return {**row, "active_version": summary.active_model_version_id}


@router.get(
    "/projects", response_model=models.ProjectsOut, summary="The projects, with their counts"
)
def projects(request: Request, who: Viewer) -> Any:
    serving_state = context(request)
    with acting_as(who):
        handles = [
            open_project(serving_state.db, name, who)
            for name in project_svc.project_names(serving_state.db)
        ]
    live = serving_state.live
    return {"projects": [_project(project_svc.summary(serving_state.db, p, live)) for p in handles]}


@router.post(
    "/projects",
    response_model=models.Project,
    status_code=201,
    summary="Create an empty project (409 when the name is taken)",
)
def create_project(body: models.NewProjectIn, request: Request, who: Creator) -> Any:
    serving_state = context(request)
    with acting_as(who):
        name = project_svc.new_project(serving_state.db, body.name, body.base_encoder)
    return _project(
        project_svc.summary(serving_state.db, open_project(serving_state.db, name, who))
    )


@router.get(
    "/projects/{project}/export",
    response_class=FileResponse,
    summary="The project as a file: csv, jsonl, yml (Rasa), zip (intent files), slots.yml, "
    "or a platform agent (dialogflow-es, dialogflow-cx, dialogflow-cx-json, lex-v2, watson, "
    "luis, clu)",
    description="The file is named after the project: `Content-Disposition` carries an ASCII "
    "`filename` and the exact UTF-8 name as `filename*` (RFC 6266, RFC 5987). What the export "
    f"left out or renamed is in the `{NOTE_HEADER}` header, percent-encoded UTF-8 (printable "
    "ASCII as it is, `%` as `%25`): read it with `urllib.parse.unquote`.",
)
def export(
    request: Request,
    p: Exporter,
    format: Annotated[str, Query(description="a file format or an agent format's name")] = "csv",
) -> Any:
    path, message = export_svc.export_download(context(request), p, format)
    return file_download(path, path.name, note=message, project_id=p.id)


def _bulk(plan: BulkPlan, applied: bool, batch: str | None = None) -> dict[str, Any]:
    left = [] if plan.relabel_labelled else list(plan.labelled)
    return {
        "applied": applied,
        "selected": plan.selected,
        "change": list(plan.change),
        "left": left,
        "protected": list(plan.protected),
        "summary": plan.summary(),
        "token": plan.token,
        "batch": batch,
    }


@router.post(
    "/projects/{project}/label/bulk",
    response_model=models.BulkLabelOut,
    summary="Label many utterances as one batch: preview, then apply what the preview said",
    description=models.BulkLabelIn.__doc__ or "",
)
def bulk_label(body: models.BulkLabelIn, request: Request, p: Editor) -> Any:
    serving_state = context(request)
    if body.preview:
        plan = bulk_svc.plan_label(
            serving_state.db,
            p,
            body.ids,
            body.intents,
            relabel_labelled=body.relabel_labelled,
            create=body.create,
        )
        return _bulk(plan, applied=False)
    with acting_as(p.actor):
        plan = bulk_svc.label_many(
            serving_state.db,
            p,
            body.ids,
            body.intents,
            relabel_labelled=body.relabel_labelled,
            token=body.token,
            expected=body.expected,
            create=body.create,
        )
    return _bulk(plan, applied=True, batch=plan.batch or None)


@router.get(
    "/projects/{project}/batches",
    response_model=models.BatchesOut,
    summary="The project's recent changes, newest first, one per batch, with whether each can "
    "still be undone: a bulk label whose answer never came (a dropped connection, a server "
    "stopped half-way) is here with the rows it changed",
)
def batches(
    request: Request,
    p: Reader,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> Any:
    return {"batches": history.activity(context(request).db, p, limit)}


@router.post(
    "/projects/{project}/undo",
    response_model=models.MessageOut,
    summary="Undo one batch (a bulk label's `batch`), if later edits did not touch its rows",
)
def undo(body: models.UndoIn, request: Request, p: Undoer) -> Any:
    with acting_as(p.actor):
        message = history.undo_batch(context(request).db, p, body.batch)
    return {"message": message}


@router.post(
    "/projects/{project}/versions/{version}/activate",
    response_model=models.MessageOut,
    summary="Make a version the one that serves (`base`: back to the frozen base encoder)",
)
def activate(version: str, request: Request, p: Training) -> Any:
    number = None if version == BASE else _version_number(version)
    with acting_as(p.actor):
        return {"message": versions_svc.activate(context(request).factories, p, number)}


@router.put(
    "/projects/{project}/versions/{version}/pin",
    response_model=models.MessageOut,
    summary="Pin a version: it keeps its files whatever else the retention rule says",
)
def pin(version: str, request: Request, p: Training) -> Any:
    with acting_as(p.actor):
        return {"message": version_files.pin(context(request).db, p, _version_number(version))}


@router.delete(
    "/projects/{project}/versions/{version}/pin",
    response_model=models.MessageOut,
    summary="Unpin a version: the retention rule may remove its files",
)
def unpin(version: str, request: Request, p: Training) -> Any:
    number = _version_number(version)
    with acting_as(p.actor):
        return {"message": version_files.pin(context(request).db, p, number, pinned=False)}


@router.delete(
    "/projects/{project}/versions/{version}/files",
    response_model=models.MessageOut,
    summary="Remove a version's files now (its row stays; 409 for the active or a pinned one)",
)
def remove_files(version: str, request: Request, p: Training) -> Any:
    serving_state, number = context(request), _version_number(version)
    with acting_as(p.actor):
        said = version_files.remove_files(serving_state.db, serving_state.artifacts, p, number)
    return {"message": said}


@router.post(
    "/projects/{project}/versions/prune",
    response_model=version_models.PruneOut,
    summary="Apply the retention rule now (it also runs after every retrain)",
)
def prune(request: Request, p: Training) -> Any:
    serving_state = context(request)
    with acting_as(p.actor):
        done = version_files.prune(serving_state.db, serving_state.artifacts, p)
    return {
        "message": done.message(p.name),
        "removed": sorted(done.versions),
        "freed_bytes": done.freed,
    }


def _version_number(version: str) -> int:
    """A version path segment as a number: ``3`` or ``v3`` (:func:`storage.ids.parse_id`: 400
    for anything else, never a number the database cannot hold).

    Example:
        >>> _version_number("v3")
        3
    """
    digits = version.strip().removeprefix("v")
    if not digits.isdigit():
        raise ValueError(f"{version!r} is no version: give its number (e.g. 3) or `{BASE}`.")
    return parse_id(digits, "version number")
