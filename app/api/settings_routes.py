"""The REST routes of a project's settings (under ``/api/v1``): each value and what it does in the
project now, as the CLI's ``settings`` and the Data tab's Project settings say it, and a change
said in words (the automatic retrain's switch as "Retrain by itself after 20 new labels: off (was
on)", never its internal key: issue 75 item 1).

| route | role |
|---|---|
| ``GET /projects/{project}/settings`` | viewer |
| ``PUT /projects/{project}/settings`` | designer |
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field

from app.access import ProjectHandle
from app.access.actions import SAVE_SETTINGS
from app.access.auth import acting_as
from app.api.errors import ERROR_RESPONSES, PREFIX
from app.api.security import Reader, context, project_for
from app.services.projects import settings as svc

router = APIRouter(prefix=PREFIX, responses=ERROR_RESPONSES)

Settler = Annotated[ProjectHandle, Depends(project_for(SAVE_SETTINGS))]


class SettingsOut(BaseModel):
    """A project's settings, what each does now, and the automatic retrain's switch in words."""

    values: dict[str, Any] = Field(
        ..., description="every setting by name (auto_retrain, auto_retrain_after, …)"
    )
    effects: dict[str, str] = Field(..., description="what each setting does in the project now")
    auto_retrain: str = Field(
        ...,
        description="the automatic retrain's switch in words, e.g. 'Retrain by itself after 20 "
        "new labels: on'",
    )
    message: str = Field("", description="after a change: what changed, in words")


class SettingsIn(BaseModel):
    set: dict[str, str] = Field(
        ...,
        description='name -> value as a person types it, e.g. {"auto_retrain": "off"} or '
        '{"oos_target_recall": "95%", "auto_retrain_after": "50"}; every value is checked '
        "first: one bad value changes nothing (400)",
    )


def _out(view: svc.SettingsView, message: str = "") -> dict[str, Any]:
    values = view.to_dict()
    return {
        "values": {name: values[name] for name in svc.SETTINGS},
        "effects": view.effects,
        "auto_retrain": svc.switch_words(view.values, view.deployment),
        "message": message,
    }


@router.get(
    "/projects/{project}/settings",
    response_model=SettingsOut,
    summary="A project's settings and what each does now",
)
def settings(request: Request, p: Reader) -> Any:
    with acting_as(p.actor):
        return _out(svc.view(context(request).live, p))


@router.put(
    "/projects/{project}/settings",
    response_model=SettingsOut,
    summary="Change some of a project's settings (all checked first) and say what changed",
)
def change_settings(body: SettingsIn, request: Request, p: Settler) -> Any:
    with acting_as(p.actor):
        view, message = svc.change(context(request).live, p, dict(body.set))
    return _out(view, message)
