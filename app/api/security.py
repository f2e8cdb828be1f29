"""Who is calling the REST API: in multi-user mode the user whose API token is in the
``Authorization: Bearer ...`` header (``intent-studio users token NAME`` issues one); in
single-user local mode (bound to loopback) the local admin, with no token, as in the UI.

Each route declares the action it is (:mod:`app.access.actions`, the one permissions table the UI
and the CLI ask too) with :func:`role` or :func:`project_for`; the role it needs, the check and
its message are the app's own (:func:`app.access.auth.require_acting`)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from app.access import ProjectHandle, open_project
from app.access.actions import (
    ACTIONS,
    ASSIGN,
    CREATE_PROJECT,
    EDIT,
    EDIT_INTENTS,
    EXPORT,
    LABEL,
    MANAGE_MEMBERS,
    READ,
    TRAIN,
    UNDO,
    Action,
    checked,
)
from app.access.auth import LOCAL, Actor, acting_as, require_acting, token_actor
from app.api.gate import NEEDS_TOKEN
from app.serving.state import ServingState

bearer = HTTPBearer(
    auto_error=False,
    description="An API token from `intent-studio users token NAME` (multi-user mode only).",
)


def context(request: Request) -> ServingState:
    serving_state: ServingState = request.app.state.serving_state
    return serving_state


def caller(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Actor:
    """The acting user; 401 in multi-user mode without a valid token. The API's gate
    (:class:`app.api.gate.ApiGate`) has looked the token up already, before the body was read."""
    serving_state = context(request)
    if not serving_state.settings.multi_user:
        return LOCAL
    checked = getattr(request.state, "actor", None)
    if isinstance(checked, Actor):
        return checked
    if credentials is None or not credentials.credentials.strip():
        raise HTTPException(401, NEEDS_TOKEN, headers={"WWW-Authenticate": "Bearer"})
    try:
        return token_actor(serving_state.db, credentials.credentials)
    except PermissionError as exc:
        raise HTTPException(401, str(exc), headers={"WWW-Authenticate": "Bearer"}) from exc


@functools.cache
def project_for(action: Action) -> Callable[..., ProjectHandle]:
    """A dependency: the route's ``{project}`` as the caller may use it for ``action``, with at
    least the role the permissions table gives it there (:func:`app.access.open_project`: 404 for
    a project they are no member of, as for one that does not exist; 403 below it). Anything but
    an action of the table: :class:`app.access.actions.UnknownAction`, at import."""

    needed = checked(action).role
    caller_may = role(action)

    def resolve_project(
        project: str,
        request: Request,
        who: Actor = Depends(caller_may),  # noqa: B008  # a closure: Annotated cannot name it
    ) -> ProjectHandle:
        return open_project(context(request).db, project, who, need=needed)

    resolve_project.action = action.name  # type: ignore[attr-defined]  # read by declared_actions
    return resolve_project


@functools.cache
def role(action: Action) -> Callable[..., Actor]:
    """A dependency: the caller, if their role includes the one the permissions table gives
    ``action`` (else 403 saying what needs it)."""
    found = checked(action)

    def check(who: Annotated[Actor, Depends(caller)]) -> Actor:
        with acting_as(who):
            try:
                return require_acting(found.role, found.says)
            except PermissionError as exc:
                raise HTTPException(403, str(exc)) from exc

    check.action = found.name  # type: ignore[attr-defined]  # read by declared_actions
    return check


# The parameters a route names, one for each action of the permissions table it may be: the
# caller (with the role the action needs) for an action on no one project, else the route's
# {project} resolved for the caller (404 for a project they are no member of).
Viewer = Annotated[Actor, Depends(role(READ))]
Creator = Annotated[Actor, Depends(role(CREATE_PROJECT))]
Trainer = Annotated[Actor, Depends(role(TRAIN))]
Reader = Annotated[ProjectHandle, Depends(project_for(READ))]
Labeller = Annotated[ProjectHandle, Depends(project_for(LABEL))]
Editor = Annotated[ProjectHandle, Depends(project_for(EDIT))]
IntentEditor = Annotated[ProjectHandle, Depends(project_for(EDIT_INTENTS))]
Undoer = Annotated[ProjectHandle, Depends(project_for(UNDO))]
Training = Annotated[ProjectHandle, Depends(project_for(TRAIN))]
Exporter = Annotated[ProjectHandle, Depends(project_for(EXPORT))]
Assigner = Annotated[ProjectHandle, Depends(project_for(ASSIGN))]
MembersAdmin = Annotated[ProjectHandle, Depends(project_for(MANAGE_MEMBERS))]


def declared_actions(routes: list[Any]) -> dict[str, list[str]]:
    """``"METHOD path"`` -> the actions each route of ``routes`` declares (its dependencies made
    by :func:`role` and :func:`project_for`; a route's own, not the nested ``role`` of its
    ``project_for``)."""
    out: dict[str, list[str]] = {}
    for route in routes:
        dependant = getattr(route, "dependant", None)
        found = [
            getattr(dep.call, "action", None)
            for dep in (dependant.dependencies if dependant is not None else [])
        ]
        for method in sorted(getattr(route, "methods", None) or []):
            out[f"{method} {route.path}"] = [a for a in found if a]
    return out


def declared_roles(routes: list[Any]) -> dict[str, str]:
    """``"METHOD path"`` -> the role each route of ``routes`` needs (from its action)."""
    return {
        door: ACTIONS[actions[0]].role
        for door, actions in declared_actions(routes).items()
        if len(actions) == 1
    }
