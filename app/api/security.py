"""Who is calling the REST API: in multi-user mode the user whose API token is in the
``Authorization: Bearer ...`` header (``intent-studio users token NAME`` issues one); in
single-user local mode (bound to loopback) the local admin, with no token, as in the UI.

Each route declares the role it needs with :func:`role`; the check and its message are the app's
own (:func:`app.access.auth.require_acting`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from app.access import ProjectHandle, open_project
from app.access.auth import LOCAL, Actor, acting_as, require_acting, token_actor
from app.api.gate import NEEDS_TOKEN
from app.serving.state import ServingState

bearer = HTTPBearer(
    auto_error=False,
    description="An API token from `intent-studio users token NAME` (multi-user mode only).",
)


def context(request: Request) -> ServingState:
    ctx: ServingState = request.app.state.ctx
    return ctx


def caller(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Actor:
    """The acting user; 401 in multi-user mode without a valid token. The API's gate
    (:class:`app.api.gate.ApiGate`) has looked the token up already, before the body was read."""
    ctx = context(request)
    if not ctx.settings.multi_user:
        return LOCAL
    checked = getattr(request.state, "actor", None)
    if isinstance(checked, Actor):
        return checked
    if credentials is None or not credentials.credentials.strip():
        raise HTTPException(401, NEEDS_TOKEN, headers={"WWW-Authenticate": "Bearer"})
    try:
        return token_actor(ctx.db, credentials.credentials)
    except PermissionError as exc:
        raise HTTPException(401, str(exc), headers={"WWW-Authenticate": "Bearer"}) from exc


def project_for(needed: str, action: str) -> Callable[..., ProjectHandle]:
    """A dependency: the route's ``{project}`` as the caller may use it, with at least the role
    ``needed`` there (:func:`app.access.open_project`: 404 for a project they are no member of,
    as for one that does not exist; 403 below ``needed``)."""

    checked = role(needed, action)

    def resolve_project(
        project: str,
        request: Request,
        who: Actor = Depends(checked),  # noqa: B008  # a closure: Annotated cannot name it
    ) -> ProjectHandle:
        return open_project(context(request).db, project, who, need=needed)

    resolve_project.role = needed  # type: ignore[attr-defined]  # read by declared_roles
    return resolve_project


def role(needed: str, action: str) -> Callable[..., Actor]:
    """A dependency: the caller, if their role includes ``needed`` (else 403 saying ``action``
    needs it)."""

    def check(who: Annotated[Actor, Depends(caller)]) -> Actor:
        with acting_as(who):
            try:
                return require_acting(needed, action)
            except PermissionError as exc:
                raise HTTPException(403, str(exc)) from exc

    check.role = needed  # type: ignore[attr-defined]  # read by declared_roles
    return check


def declared_roles(routes: list[Any]) -> dict[str, str]:
    """``"METHOD path"`` -> the role each route of ``routes`` declares (an APIRouter's routes;
    for the README's table test)."""
    out: dict[str, str] = {}
    for route in routes:
        dependant = getattr(route, "dependant", None)
        for dep in dependant.dependencies if dependant is not None else []:
            needed = getattr(dep.call, "role", None)
            if needed:
                for method in sorted(route.methods):
                    out[f"{method} {route.path}"] = needed
    return out
