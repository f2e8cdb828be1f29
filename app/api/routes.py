"""The REST routes, ``/api/v1``: each calls the same service function as the UI and the CLI.

| route | role |
|---|---|
| ``POST /projects/{project}/predict`` (``text``: micro-batched; ``texts``: one batch call) | viewer |
| ``GET /projects/{project}/utterances`` | viewer |
| ``GET /projects/{project}/versions`` | viewer |
| ``GET /projects/{project}/intents`` | viewer |
| ``PUT /projects/{project}/intents/{intent}`` | designer |
| ``GET /jobs/{job_id}`` | viewer |
| ``POST /jobs/{job_id}/cancel`` | designer |
| ``POST /projects/{project}/label`` | designer |
| ``DELETE /projects/{project}/utterances/{utterance_id}`` | designer |
| ``POST /projects/{project}/train`` | designer |

and those of :mod:`app.api.project_routes` (projects, bulk label and undo, activate, export,
health) and :mod:`app.api.team_routes` (labelling as a team); any other ``/api/v1`` path
answers 404 with ``{"error": ...}`` (:data:`fallback`).
"""

from __future__ import annotations

import asyncio
from contextlib import nullcontext
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from app.access import open_project
from app.access.auth import acting_as
from app.api import models, version_models
from app.api.errors import ERROR_RESPONSES, PREFIX, error_response
from app.api.security import (
    Editor,
    IntentEditor,
    Labeller,
    Reader,
    Trainer,
    Training,
    Viewer,
    context,
)
from app.services.labelling import data as data_svc
from app.services.models import predict as predict_svc
from app.services.models import version_files
from app.services.models import versions as versions_svc
from app.services.training import retrain_jobs as training_svc
from storage.job_view import JobView

router = APIRouter(prefix=PREFIX, responses=ERROR_RESPONSES)

ONE = "The result, with exactly the fields a model bundle's `predict` returns."


@router.post(
    "/projects/{project}/predict",
    response_model=models.PredictOut,
    response_model_exclude_unset=True,
    summary="Predict the intents of one utterance or many",
    description=(
        "`text`: one utterance; concurrent calls share one encoder pass (micro-batched). "
        "`texts`: many in one call, at most 200 for a viewer and 1,000 for a designer or admin, "
        "2 such calls at once per user. " + ONE
    ),
)
async def predict(project: str, body: models.PredictIn, request: Request, who: Viewer) -> Any:
    serving_state = context(request)
    if body.text is not None:
        # each user's place among their one-liners, held until answered (429 past the limit);
        # single-user mode has one user, the local admin, and no such limit
        held = (
            serving_state.live.admission.line(who.name)
            if serving_state.settings.multi_user
            else nullcontext()
        )
        with held:
            result = await request.app.state.batcher.submit(
                (project, who, body.text, body.k, body.context or ""), key=who.name
            )
        if isinstance(result, Exception):
            return error_response(result)
        return {"predictions": [result]}
    # the batch lane: the caller's own limits (texts per call by role, calls at once per user)
    p = await asyncio.to_thread(open_project, serving_state.db, project, who)
    rows = await asyncio.to_thread(
        predict_svc.predict,
        serving_state.live,
        p,
        body.all_texts(),
        k=body.k,
        who=who,
        contexts=body.contexts,
    )
    return {"predictions": rows}


@router.post(
    "/projects/{project}/label",
    response_model=models.Utterance,
    summary="Add a labelled utterance, or relabel it when the text is already in the project "
    "(with `version`: 409 when someone changed it since you read it)",
)
def label(body: models.LabelIn, request: Request, p: Labeller) -> Any:
    with acting_as(p.actor):
        row = data_svc.label_text(
            context(request).db,
            p,
            body.text,
            body.intents,
            body.split,
            create=body.create,
            expected_version=body.version,
        )
    return {**row, "intents": list(row["labels"])}


@router.get(
    "/projects/{project}/utterances",
    response_model=models.UtterancesOut,
    summary="The project's utterances with their intents, filtered",
)
def utterances(
    request: Request,
    p: Reader,
    intent: Annotated[str | None, Query(description="`(none)`: without an intent")] = None,
    split: Annotated[str | None, Query(description="train, test or unlabelled")] = None,
    search: Annotated[str | None, Query(description="text contains")] = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
) -> Any:
    rows = data_svc.table(
        context(request).db, p, intent=intent, split=split, search=search, limit=limit
    )
    return {
        "utterances": [{**r, "intents": [i for i in r["intents"].split("|") if i]} for r in rows]
    }


@router.delete(
    "/projects/{project}/utterances/{utterance_id}",
    response_model=models.DeletedOut,
    summary="Delete one utterance (`POST …/undo` with the answer's `batch` brings it back)",
    description="A test utterance is deleted only with `confirm_test=true`: the test split "
    "measures the model, so a script that deletes what the model gets wrong there would bend "
    "the accuracy (400 otherwise, nothing deleted). An item you may not change now (given to "
    "annotators, waiting for review, accepted) is refused with 403.",
)
def delete_utterance(
    utterance_id: models.Id,
    request: Request,
    p: Editor,
    confirm_test: Annotated[bool, Query(description="true: a test utterance may go")] = False,
) -> Any:
    try:
        with acting_as(p.actor):
            gone = data_svc.delete_utterance(
                context(request).db, p, utterance_id, confirm_test=confirm_test
            )
    except data_svc.UnconfirmedTestChange as exc:
        raise data_svc.UnconfirmedTestChange(
            f"{exc} Send confirm_test=true to delete it."
        ) from None
    return {"message": gone.message(), "batch": gone.batch}


@router.get(
    "/projects/{project}/intents",
    response_model=models.IntentsOut,
    summary="The project's intents with their descriptions and example counts",
)
def intents(request: Request, p: Reader) -> Any:
    return {"intents": data_svc.intents(context(request).db, p)}


@router.put(
    "/projects/{project}/intents/{intent}",
    response_model=models.Intent,
    summary="Set (or clear, with an empty text) an intent's description",
)
def describe(intent: str, body: models.DescribeIn, request: Request, p: IntentEditor) -> Any:
    serving_state = context(request)
    with acting_as(p.actor):
        data_svc.describe_intent(serving_state.db, p, intent, body.description)
    return next(i for i in data_svc.intents(serving_state.db, p) if i["name"] == intent)


@router.get(
    "/projects/{project}/versions",
    response_model=version_models.VersionsOut,
    summary="The project's model versions, newest first, with their headline metrics and the "
    "disk their files use",
)
def versions(request: Request, p: Reader) -> Any:
    serving_state = context(request)
    budget = serving_state.settings.version_disk_mb
    return {
        "versions": versions_svc.history(serving_state.db, p),
        "disk": version_files.disk_of(serving_state.db, p, budget).to_dict(),
    }


def _job(view: JobView) -> dict[str, Any]:
    fields = models.Job.model_fields
    return {
        **{name: getattr(view, name) for name in fields if name not in ("percent", "state")},
        "percent": view.percent,
        "state": training_svc.describe(view),
    }


@router.post(
    "/projects/{project}/train",
    response_model=models.TrainOut,
    status_code=202,
    summary="Queue a retrain (a worker runs it); follow it with GET /api/v1/jobs/{id}",
)
def train(body: models.TrainIn, request: Request, p: Training) -> Any:
    with acting_as(p.actor):
        view, created = training_svc.request_retrain(
            context(request).training, p, {**body.settings, "method": body.method}
        )
    out = {"job": _job(view), "created": created}
    return out if created else JSONResponse(out, status_code=200)


@router.get(
    "/jobs/{job_id}",
    response_model=models.Job,
    summary="A training job: status, phase, progress, ETA and message",
)
def job(job_id: models.Id, request: Request, who: Viewer) -> Any:
    with acting_as(who):
        return _job(training_svc.job(context(request).training, job_id))


@router.post(
    "/jobs/{job_id}/cancel",
    response_model=models.Job,
    summary="Cancel a training job: a queued one at once, a running one within seconds",
)
def cancel_job(job_id: models.Id, request: Request, who: Trainer) -> Any:
    with acting_as(who):
        return _job(training_svc.cancel(context(request).db, job_id))


# Last in the app (:func:`app.api.server.create_api`): any path no route above matches.
fallback = APIRouter(prefix=PREFIX)


@fallback.api_route(
    "/{path:path}",
    methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
    include_in_schema=False,
)
def unknown(path: str, request: Request) -> JSONResponse:
    """Any other ``/api/v1`` path (last: every route above matches first)."""
    return JSONResponse(
        {"error": f"No API route {request.method} /api/v1/{path}: see /docs."}, status_code=404
    )
