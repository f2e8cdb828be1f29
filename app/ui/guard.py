"""The UI's front door: who is acting, in which project, with what role, checked on the server for
every event of the app, in one place.

Each write callback, and each API-only endpoint (:mod:`app.ui.api`), declares the action it is
with :func:`guarded`, by its constant in the one permissions table (:mod:`app.access.actions`,
which says the role it needs; anything else is refused when the tab is built). The signed-in
name Gradio gives the request is checked with :func:`app.access.auth.require`; a refusal
becomes a message (an API endpoint's: the call's error) and changes nothing; the acting user is
recorded for the audit log. :func:`enforce_roles` then walks every event of the built app:
whatever was not declared is a *read*, run for any signed-in user but inside
:func:`storage.db.read_only` when that user is a viewer (in the app, or in the project the event
is for), so a write path that somebody forgot to declare is refused by the database layer
instead of going through.

A callback takes its project as a parameter annotated :class:`app.access.ProjectHandle`: the
wrapper resolves the picker's value (a name) into the handle once, for the signed-in user with
the role the event needs there (:func:`app.access.open_project`: a project they are no member of
is "no project"), before the callback runs; an empty picker gives ``None``.

A callback that raises anything but a refusal (a bug: an AttributeError, a TypeError...) is
answered here too, by :func:`unexpected`: the error is logged with its traceback, shown as an
error toast and written into the event's status line (its ``message`` output for a declared
callback, and any output whose ``elem_id`` ends in ``status``); its other outputs are left as
they were. Nothing turns it into an empty answer.
"""

from __future__ import annotations

import functools
import inspect
import logging
import typing
from collections.abc import Callable, Sequence
from typing import Any

import gradio as gr

from app.access import ProjectHandle, resolve
from app.access.actions import EDIT, READ, Action, checked
from app.access.auth import Actor, acting_as, require
from app.serving.state import ServingState
from app.ui.common import USER_ERRORS, problem
from storage.db import read_only
from storage.errors import NotFoundError, StorageError

logger = logging.getLogger(__name__)

ROLE = "__intent_studio_role__"  # set on a callback by guarded(): the role it needs
ACTION = (
    "__intent_studio_action__"  # and its action's name (app.access.actions), "read" if undeclared
)
DOOR = "__intent_studio_door__"  # set on a guarded callback by enforce(): the context it checks in
SHAPE = "__intent_studio_shape__"  # set by enforce_roles(): (its outputs, its status lines)
PROJECTS = "__intent_studio_projects__"  # set by guarded(): its parameters that take a project
# An API endpoint's "status lines" (gr.api: its outputs are no components a refusal could be
# written in, or left as they are): its refusal is the call's error.
ENDPOINT = None
Shape = tuple[int, tuple[int, ...] | None]


def unexpected(fn: Callable[..., Any], exc: Exception, shape: Shape) -> Any:
    """The answer to a callback that raised ``exc``, in each status line of ``shape`` (the
    event's number of outputs and the positions of its status lines; every other output is left
    as it is). A refusal (:data:`app.ui.common.USER_ERRORS`: a project deleted meanwhile) says
    its message, as :func:`app.ui.common.attempt` would have. Anything else is a bug: logged with
    its traceback and shown as an error (a toast that stays, and the status line); the user
    reads the error's kind, never its text (it may quote SQL or a file path) or traceback.
    An API endpoint (:data:`ENDPOINT`) answers either as the call's error."""
    from gradio.helpers import log_message

    outputs, status = shape
    if isinstance(exc, USER_ERRORS):
        if status is ENDPOINT:
            refuse(str(exc))
        said = problem(str(exc))
    else:
        name = getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn)))
        logger.error("Unexpected error in UI callback %s", name, exc_info=exc)
        message = (
            f"Something went wrong ({type(exc).__name__}): a bug, logged on the server with its "
            "details. Try again; if it happens again, tell whoever runs Intent Studio."
        )
        if status is ENDPOINT:
            refuse(message)
        log_message(message, title="Error", level="error", duration=None)  # type: ignore[arg-type]
        said = problem(message, notify=False)
    answer: list[Any] = [gr.skip()] * outputs
    for i in status:
        answer[i] = said
    if outputs <= 1:
        return answer[0] if answer else None
    return tuple(answer)


def refuse(message: str) -> typing.NoReturn:
    """End the call with ``message`` as its error (the page's toast, an API call's ``error``
    event), and nothing in the log: a refusal is no fault of the server's (Gradio prints the
    traceback of every other error it is given)."""
    raise gr.Error(message, print_exception=False)


def _shape(fn: Callable[..., Any]) -> Shape:
    """The event's outputs and status lines as :func:`enforce_roles` found them (a callback
    called outside an event: one output, its status)."""
    shape: Shape = getattr(fn, SHAPE, None) or (1, (0,))
    return shape


def _type_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """``fn``'s parameter annotations as objects. A hint that does not resolve in ``fn``'s module
    is a programming error (NameError), raised when the app is built: Gradio and the project
    parameters below are found by these hints, so none may be skipped."""
    return typing.get_type_hints(fn)


def _takes_request(fn: Callable[..., Any]) -> bool:
    return "request" in inspect.signature(fn).parameters


def _with_request(fn: Callable[..., Any], run: Callable[..., Any], action: Action) -> Any:
    """``run`` dressed as ``fn`` plus a trailing ``request: gr.Request`` unless ``fn`` takes
    one already (Gradio fills a parameter by its annotation, so the wrapper receives the
    signed-in name)."""
    functools.update_wrapper(run, fn)
    del run.__wrapped__  # type: ignore[attr-defined]  # Gradio must see the signature below
    params = list(inspect.signature(fn).parameters.values())
    if not _takes_request(fn):
        request_param = inspect.Parameter(
            "request", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None, annotation=gr.Request
        )
        params.append(request_param)
    returns = inspect.signature(fn).return_annotation  # gr.api makes its outputs from it
    run.__signature__ = inspect.Signature(params, return_annotation=returns)  # type: ignore[attr-defined]
    # Resolved here, in fn's module: Gradio finds gr.Request / gr.SelectData parameters by their
    # type hints, and a string annotation would be looked up in this module instead.
    # What arrives for a project is its name (the picker's value, an API call's string): so say
    # the API docs of an endpoint (gr.api reads these); the handle is made here (admit()).
    hints = {n: _as_sent(h) for n, h in _type_hints(fn).items()}
    run.__annotations__ = {**hints, "request": gr.Request}
    setattr(run, PROJECTS, tuple(n for n, h in _type_hints(fn).items() if _as_sent(h) is not h))
    setattr(run, ROLE, action.role)
    setattr(run, ACTION, action.name)
    return run


def _as_sent(hint: Any) -> Any:
    """A type hint as the caller sends it: a project handle is sent as its name."""
    if hint is ProjectHandle:
        return str
    if ProjectHandle in typing.get_args(hint):
        return str | None
    return hint


@functools.cache
def _project_params(fn: Callable[..., Any]) -> tuple[tuple[int, bool], ...]:
    """The positions of ``fn``'s parameters annotated :class:`ProjectHandle` (or ``| None``),
    each with whether it takes None."""
    hints = _type_hints(fn)
    out = []
    for i, name in enumerate(inspect.signature(fn).parameters):
        hint = hints.get(name)
        if hint is ProjectHandle or ProjectHandle in typing.get_args(hint):
            out.append((i, hint is not ProjectHandle))
    return tuple(out)


def admit(
    serving_state: ServingState,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    username: str | None,
    need: str,
) -> tuple[Actor, tuple[Any, ...], list[ProjectHandle]]:
    """The signed-in user (with at least the role ``need``), ``args`` with each project name in a
    :class:`ProjectHandle` parameter of ``fn`` resolved for them with the role ``need`` there (an
    empty value: None, where the parameter takes it), and the handles: one database session for
    all of it (none in single-user mode for a callback without a project).

    Raises:
        NotFoundError: no such project for the user, or none picked where one is needed.
        PermissionError: not signed in, or a role below ``need``.
    """
    positions = _project_params(fn)
    if not positions and not serving_state.settings.multi_user:
        return (
            require(serving_state.db, serving_state.settings.multi_user, username, need),
            args,
            [],
        )
    with serving_state.db.session() as s:
        who = require(serving_state.db, serving_state.settings.multi_user, username, need, s=s)
        out, handles = list(args), []
        for i, optional in positions:
            if i >= len(out) or isinstance(out[i], ProjectHandle):
                continue
            if not out[i]:
                if not optional:
                    raise NotFoundError("Pick or create a project first.")
                out[i] = None
                continue
            # what a door sends is a name: a number from an API call too (never a row's id)
            out[i] = resolve(s, str(out[i]), who, need=need)
            handles.append(out[i])
    return who, tuple(out), handles


def _split_request(
    fn: Callable[..., Any], args: tuple[Any, ...], request: Any
) -> tuple[tuple[Any, ...], dict[str, Any], Any]:
    """(positional and keyword arguments for ``fn``, the request): the request Gradio added is
    taken off unless ``fn`` takes it itself."""
    own = _takes_request(fn)
    if request is not None:
        return args, ({"request": request} if own else {}), request
    found = next((a for a in reversed(args) if isinstance(a, gr.Request)), None)
    if found is not None and not own and args[-1] is found:
        return args[:-1], {}, found
    return args, {}, found


def guarded(
    action: Action, *, outputs: int = 1, message: int = 0, notify: bool = True
) -> Callable[[Callable[..., Any]], Any]:
    """Declare that a Gradio callback is the named ``action`` (:data:`app.access.actions.ACTIONS`),
    run only for users with the role the table gives it (an action it does not name:
    :class:`app.access.actions.UnknownAction`, at once). A refusal becomes output number
    ``message`` (the status line; the other ``outputs`` are left unchanged), and a toast unless
    ``notify=False``.

    The check needs the app's database and deployment, which :func:`enforce_roles` hands every
    declared callback of the built app (:func:`enforce` one callback): a tab declares roles
    without holding the context, and a callback declared but never enforced refuses to run."""

    action = checked(action)  # one of the table's, or UnknownAction now
    role = action.role

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, request: Any = None) -> Any:
            serving_state: ServingState | None = getattr(run, DOOR, None)
            if (
                serving_state is None
            ):  # fail closed: nobody gave this callback the role check's context
                raise RuntimeError(f"{fn.__name__} was declared with guarded() but not enforced")
            args, kwargs, request = _split_request(fn, args, request)
            try:
                who, args, _ = admit(
                    serving_state, fn, args, getattr(request, "username", None), role
                )
            except (PermissionError, StorageError) as exc:
                if _shape(run)[1] is ENDPOINT:
                    refuse(str(exc))
                said = problem(str(exc), notify=notify)
                if outputs == 1:
                    return said
                unchanged: list[Any] = [gr.update()] * outputs
                unchanged[message] = said
                return tuple(unchanged)
            with acting_as(who):
                try:
                    return fn(*args, **kwargs)
                except gr.Error:
                    raise
                except Exception as exc:
                    outs, status = getattr(run, SHAPE, None) or (outputs, ())
                    lines = status if status is ENDPOINT else tuple(sorted({message, *status}))
                    return unexpected(fn, exc, (outs, lines))

        setattr(run, DOOR, None)
        return _with_request(fn, run, action)

    return wrap


def enforce(serving_state: ServingState, fn: Callable[..., Any]) -> Callable[..., Any]:
    """Give a callback declared with :func:`guarded` the context its role check runs in."""
    if not hasattr(fn, DOOR):
        raise TypeError(f"{getattr(fn, '__name__', fn)!r} was not declared with guarded()")
    setattr(fn, DOOR, serving_state)
    return fn


def _read_only_reason(who: Actor, viewer: ProjectHandle | None = None) -> str:
    if viewer is not None:
        return (
            f"{who.name} is a viewer in {viewer.name!r}: changes need the designer role. "
            "Nothing was changed."
        )
    return f"{who.name} is a {who.role}: changes need the designer role. Nothing was changed."


def _as_reader(serving_state: ServingState, fn: Callable[..., Any]) -> Callable[..., Any]:
    """A callback nobody declared a role for: any signed-in user may run it, a viewer only
    reading."""

    def run(*args: Any, request: Any = None) -> Any:
        args, kwargs, request = _split_request(fn, args, request)
        try:
            user = getattr(request, "username", None)
            who, args, handles = admit(serving_state, fn, args, user, READ.role)
        except (PermissionError, StorageError) as exc:
            refuse(str(exc))
        viewer = next((h for h in handles if not h.may(EDIT.role)), None)
        with acting_as(who):
            try:
                if who.may(EDIT.role) and viewer is None:
                    return fn(*args, **kwargs)
                reason = _read_only_reason(who, viewer)
                with read_only(reason):
                    return fn(*args, **kwargs)
            except gr.Error:
                raise
            except Exception as exc:
                return unexpected(fn, exc, _shape(run))

    return _with_request(fn, run, READ)


def _batched_reader(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A batched event (one call serves several requests, so there is no one user): read only,
    for everyone."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        with read_only("This endpoint only reads. Nothing was changed."):
            try:
                return fn(*args, **kwargs)
            except gr.Error:
                raise
            except Exception as exc:  # a bug: logged and shown as an error, never an empty batch
                return unexpected(fn, exc, (1, ENDPOINT))

    setattr(run, ROLE, READ.role)
    setattr(run, ACTION, READ.name)
    return run


def enforce_roles(serving_state: ServingState, demo: gr.Blocks) -> int:
    """Pass every event of ``demo`` through the role check: the declared ones (:func:`guarded`)
    are given ``serving_state`` to check in; every other callback becomes a read (see the module's docstring).
    Generators and coroutines cannot be wrapped this way, so the app may have none: an
    undeclared one fails here, when the app is built. Every value of every call is checked by
    type first (:mod:`app.ui.door_types`, applied by the app just before). Returns how many
    events were wrapped."""
    wrapped = 0
    for block_fn in demo.fns.values():
        fn = block_fn.fn
        shape: Shape = (len(block_fn.outputs), status_lines(block_fn.outputs))
        if is_endpoint(block_fn):
            shape = (len(block_fn.outputs), ENDPOINT)
        if fn is not None and hasattr(fn, DOOR):
            enforce(serving_state, fn)
            setattr(fn, SHAPE, shape)
            continue
        if fn is None or getattr(fn, ROLE, None):
            continue
        if inspect.isgeneratorfunction(fn) or inspect.iscoroutinefunction(fn):
            raise TypeError(f"event {block_fn.name!r}: declare its role with guarded()")
        block_fn.fn = _batched_reader(fn) if block_fn.batch else _as_reader(serving_state, fn)
        setattr(block_fn.fn, SHAPE, shape)
        wrapped += 1
    return wrapped


def status_lines(outputs: Sequence[Any]) -> tuple[int, ...]:
    """The positions of an event's status lines among its ``outputs``: the components whose
    ``elem_id`` ends in ``status`` (``data-status``, ``eval-status``...)."""
    return tuple(
        i for i, c in enumerate(outputs) if str(getattr(c, "elem_id", "") or "").endswith("status")
    )


def is_endpoint(block_fn: Any) -> bool:
    """Whether an event of the app is an API-only endpoint (``gr.api``): its inputs and outputs
    are Gradio's placeholders, no component of the page."""
    from gradio.components.api_component import Api

    return any(isinstance(c, Api) for c in [*block_fn.inputs, *block_fn.outputs])
