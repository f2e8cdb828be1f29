"""Every failure of a REST call as ``{"error": "user message"}`` with its status: 400 bad input,
401 no or bad token, 403 role, 404 unknown project/version/job, 409 someone else's change or a
read-only project, 422 a body that does not fit the schema, 429 busy (with ``Retry-After``),
503 the training queue is down (with the failed job's ``job_id``), or the database or the model
store does not answer (with ``Retry-After``, logged as one line, no traceback).
Never a traceback or SQL: anything unexpected is logged and answered 500 with a plain sentence."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from app.api.models import ErrorOut
from app.perimeter.json_types import takes
from app.services.models.predict import error_message
from app.services.training.retrain_jobs import QueueUnavailable
from app.serving.admission import BusyError
from storage.errors import (
    ArtifactsUnavailable,
    ConflictError,
    DatabaseUnavailable,
    NotFoundError,
    ReadOnlyError,
    ReadOnlyProjectError,
)
from storage.errors import BusyError as DatabaseBusy

logger = logging.getLogger(__name__)

RETRY_AFTER_S = 1
PREFIX = "/api/v1"
# What each refusal means, for the OpenAPI docs of every route.
ERROR_RESPONSES: dict[int | str, dict[str, object]] = {
    code: {"model": ErrorOut, "description": what}
    for code, what in {
        400: "bad input (the message says what)",
        401: "no or unknown API token (multi-user mode)",
        403: "your role does not allow it",
        404: "unknown project, version or job",
        409: "changed by someone else meanwhile, a name taken, a read-only project, a version "
        "with no files, or a project whose versions use their disk budget",
        422: "the body does not fit the schema",
        429: "busy: retry after `Retry-After` seconds",
        503: "the training queue (the answer names the failed job), the database or the model "
        "store is down, or the server is stopping: retry after `Retry-After` seconds",
    }.items()
}
# Most specific first: the first class an exception is an instance of decides its status.
STATUS: tuple[tuple[type[BaseException], int], ...] = (
    (QueueUnavailable, 503),  # says why, with the (failed) job's id
    (DatabaseUnavailable, 503),  # PostgreSQL down: as the health check answers
    (ArtifactsUnavailable, 503),  # the bucket down: as the health check answers
    (NotFoundError, 404),
    (ConflictError, 409),
    (ReadOnlyProjectError, 409),  # a project imported from a bundle
    (ReadOnlyError, 409),  # a read-only database (roles are checked before)
    (DatabaseBusy, 429),
    (BusyError, 429),
    (PermissionError, 403),
    (ValueError, 400),
    (KeyError, 400),
)


def status_of(exc: BaseException) -> int:
    """The HTTP status a service error answers with (500: not a user error)."""
    return next((code for cls, code in STATUS if isinstance(exc, cls)), 500)


def error_response(exc: BaseException) -> JSONResponse:
    """The JSON answer to a service error (see the module's docstring)."""
    code = status_of(exc)
    if code == 500:
        logger.error("REST API call failed", exc_info=exc)
        return JSONResponse({"error": "Internal error: see the server log."}, status_code=500)
    retry = code == 429 or isinstance(exc, DatabaseUnavailable | ArtifactsUnavailable)
    headers = {"Retry-After": str(RETRY_AFTER_S)} if retry else None
    body: dict[str, object] = {"error": error_message(exc)}
    if isinstance(exc, QueueUnavailable):
        body["job_id"] = exc.job_id
    return JSONResponse(body, status_code=code, headers=headers)


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
        msg = takes(err) or str(err.get("msg", "invalid")).removeprefix("Value error, ")
        parts.append(f"{where}: {msg}" if where else msg)
    return "; ".join(parts) or "The request body does not fit the schema (see /docs)."


def install(api: FastAPI) -> None:
    """Register the handlers on ``api``."""

    async def http_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        return JSONResponse({"error": exc.detail}, status_code=exc.status_code, headers=exc.headers)

    async def invalid(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return JSONResponse({"error": _validation_message(exc)}, status_code=422)

    async def service_error(_: Request, exc: Exception) -> JSONResponse:
        return error_response(exc)

    api.add_exception_handler(HTTPException, http_error)
    api.add_exception_handler(RequestValidationError, invalid)
    for cls in (
        ValueError,
        KeyError,
        PermissionError,
        BusyError,
        QueueUnavailable,
        DatabaseUnavailable,
        ArtifactsUnavailable,
        Exception,
    ):
        api.add_exception_handler(cls, service_error)
