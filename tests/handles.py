"""A project as a test's calls see it. The app resolves a project once per request, at its edge
(:func:`app.access.open_project`); a test's calls of services are each such a request, so a
:class:`Live` project resolves itself again at every use: a setting changed or a version made
active by one call is what the next one sees, as in the app."""

from __future__ import annotations

from typing import Any

from app.access import ProjectHandle, open_project
from app.access.auth import LOCAL, Actor


class Live:
    """The project ``name`` for ``who`` (the local admin by default), resolved at every use;
    ``str()`` is its name (a path of the REST API, a CLI argument)."""

    def __init__(self, serving_state: Any, name: str, who: Actor = LOCAL) -> None:
        self._ctx, self._name, self._who = serving_state, str(name), who

    def handle(self) -> ProjectHandle:
        return open_project(self._ctx.db, self._name, self._who)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.handle(), attr)

    def __str__(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"Live({self._name!r}, as {self._who.name})"

    def as_(self, who: Actor) -> Live:
        """The same project as ``who`` sees it."""
        return Live(self._ctx, self._name, who)


def live(
    serving_state: Any, name: str | Live | ProjectHandle, who: Actor = LOCAL
) -> Live | ProjectHandle:
    """The project ``name`` for ``who``; a project already resolved (a :class:`Live` one, a
    handle) stays as it is, with its user."""
    return name if isinstance(name, Live | ProjectHandle) else Live(serving_state, name, who)
