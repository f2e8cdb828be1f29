"""The REST routes of labelling as a team (under ``/api/v1``, beside
:data:`app.api.routes.router`): an admin assigns unlabelled utterances, each annotator fetches
their items and answers them, anyone reads the agreement and downloads the raw answers, a
reviewer settles the disagreements. The rules are :mod:`app.services.labelling.team`'s.

| route | role |
|---|---|
| ``POST /projects/{project}/team/assign`` | admin |
| ``GET /projects/{project}/team/next?limit=`` | designer |
| ``POST /projects/{project}/team/answers`` | designer |
| ``GET /projects/{project}/team/agreement`` | viewer |
| ``GET /projects/{project}/team/review`` | designer |
| ``POST /projects/{project}/team/review/{utterance_id}`` | designer |
| ``GET /projects/{project}/team/answers.jsonl`` | designer |
| ``GET /projects/{project}/members`` | viewer |
| ``PUT /projects/{project}/members/{user}`` | admin |
| ``DELETE /projects/{project}/members/{user}`` | admin |

An answer to an item not assigned to the caller (or accepted already), and a decision on an item
not waiting for review or by one of its annotators, are refused with 403 and change nothing
(:mod:`app.access.policy`). A decision is one batch: ``POST
/projects/{project}/undo`` with its ``batch`` reverts it (the item waits for review again).
"""

from __future__ import annotations

import re
import uuid
from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse

from app.access.auth import acting_as
from app.api import models, team_models
from app.api.errors import ERROR_RESPONSES, PREFIX
from app.api.security import (
    Assigner,
    Exporter,
    Labeller,
    MembersAdmin,
    Reader,
    context,
)
from app.services.labelling import team, team_answers
from app.services.projects import members as members_svc
from app.services.projects.downloads import download_path
from core.evaluation.oos import OUT_OF_SCOPE

router = APIRouter(prefix=PREFIX, responses=ERROR_RESPONSES)

TEAM = "/projects/{project}/team"


@router.post(
    f"{TEAM}/assign",
    response_model=team_models.AssignOut,
    summary="Split the unlabelled utterances nobody has yet between annotators, with an overlap",
    description=team_models.AssignIn.__doc__ or "",
)
def assign(body: team_models.AssignIn, request: Request, p: Assigner) -> Any:
    with acting_as(p.actor):
        given = team.assign(
            context(request).db,
            p,
            body.annotators,
            overlap=body.overlap,
            search=body.search,
            limit=body.limit,
        )
    shared = given.pop("overlap")
    return {"given": given, "overlap": shared}


@router.get(
    f"{TEAM}/next",
    response_model=team_models.NextOut,
    summary="The caller's open items (assigned to them, not answered, unlabelled) and progress",
)
def next_items(
    request: Request,
    p: Labeller,
    limit: Annotated[int, Query(ge=1, le=1000)] = 20,
) -> Any:
    serving_state = context(request)
    ids = team.open_items(serving_state.db, p)[:limit]
    assigned, answered = team.progress(serving_state.db, p).get(p.actor.name, (0, 0))
    rows = team.items(serving_state.db, p, ids)
    return {
        "items": [{"id": r["id"], "text": r["text"]} for r in rows],
        "assigned": assigned,
        "answered": answered,
    }


@router.post(
    f"{TEAM}/answers",
    response_model=team_models.AnswerOut,
    summary="Answer an item assigned to you: accepted alone, or when everyone on it agrees",
    description=team_models.AnswerIn.__doc__ or "",
)
def answer(body: team_models.AnswerIn, request: Request, p: Labeller) -> Any:
    serving_state = context(request)
    before = team.items(serving_state.db, p, [body.id])
    with acting_as(p.actor):
        message = team.submit(serving_state.db, p, body.id, body.answer, body.intents)
    (now,) = team.items(serving_state.db, p, [body.id])  # submit refused an unknown id already
    was_open = bool(before) and before[0]["split"] == "unlabelled"
    accepted = was_open and now["split"] != "unlabelled"
    return {"message": message, "accepted": accepted, "labels": now["labels"]}


@router.get(
    f"{TEAM}/agreement",
    response_model=team_models.AgreementOut,
    summary="Agreement on the overlap: Cohen's kappa per pair, Krippendorff's alpha, per intent",
    description=team_models.AgreementOut.__doc__ or "",
)
def agreement(request: Request, p: Reader) -> Any:
    found = team_answers.measure(context(request).db, p)
    return {
        "annotators": list(found.annotators),
        "items": found.items,
        "disputed": len(found.disputed),
        "alpha": found.alpha,
        "alpha_masi": found.alpha_masi,
        "pairs": [asdict(p) for p in found.pairs],
        "intents": [{**asdict(i), "disputed": list(i.disputed)} for i in found.intents],
    }


@router.get(
    f"{TEAM}/review",
    response_model=team_models.ReviewOut,
    summary="The review queue: overlap items whose answers differ, still without a label",
)
def review(request: Request, p: Labeller) -> Any:
    return {
        "disputes": [
            {
                "id": d.id,
                "text": d.text,
                "answers": [
                    {
                        "annotator": g.annotator,
                        "answer": g.action,
                        "intents": [OUT_OF_SCOPE] if g.action == "oos" else list(g.intents),
                    }
                    for g in d.answers
                ],
            }
            for d in team.disputes(context(request).db, p, mine_left_out=True)
        ]
    }


@router.post(
    f"{TEAM}/review/{{utterance_id}}",
    response_model=team_models.DecideOut,
    summary="Decide a disputed item's label (one batch: `POST …/undo` reverts it)",
)
def decide(
    utterance_id: models.Id, body: team_models.DecideIn, request: Request, p: Labeller
) -> Any:
    batch = str(uuid.uuid4())
    with acting_as(p.actor):
        message = team.decide(context(request).db, p, utterance_id, body.intents, batch=batch)
    return {"message": message, "batch": batch}


@router.get(
    f"{TEAM}/answers.jsonl",
    response_class=FileResponse,
    summary="Every annotator's answer, one JSON object per line, with the accepted intents",
)
def answers_file(request: Request, p: Exporter) -> Any:
    serving_state = context(request)
    name = f"{re.sub(r'[^A-Za-z0-9.-]+', '_', p.name).strip('_')}-answers.jsonl"
    path = team_answers.export_answers(
        serving_state.db, p, download_path(serving_state.settings, name, p.id)
    )
    return FileResponse(path, filename=path.name, media_type="application/x-ndjson")


@router.get(
    "/projects/{project}/members",
    response_model=team_models.MembersOut,
    summary="Who sees the project: its members with their role there, and the admins",
)
def list_members(request: Request, p: Reader) -> Any:
    return {"members": [asdict(m) for m in members_svc.members(context(request).db, p)]}


@router.put(
    "/projects/{project}/members/{user}",
    response_model=models.MessageOut,
    summary="Make a user a member of the project with a role there (or change it)",
    description=team_models.MemberIn.__doc__ or "",
)
def put_member(user: str, body: team_models.MemberIn, request: Request, p: MembersAdmin) -> Any:
    with acting_as(p.actor):
        return {"message": members_svc.add_member(context(request).db, p, user, body.role)}


@router.delete(
    "/projects/{project}/members/{user}",
    response_model=models.MessageOut,
    summary="End a user's membership: they no longer see the project",
)
def delete_member(user: str, request: Request, p: MembersAdmin) -> Any:
    with acting_as(p.actor):
        return {"message": members_svc.remove_member(context(request).db, p, user)}
