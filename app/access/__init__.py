"""Who may do what, asked at one door: a project resolved and authorised once at the edge
(:mod:`app.access.handle`) and one rule for every change of an item (:mod:`app.access.policy`).

The names below load with their module on first use: the permissions table
(:mod:`app.access.actions`), which every command of the CLI names when its module is imported,
comes without the serving state the handle's module needs (``intent-studio --help`` stays as
light as it was)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.access.handle import (
        ProjectHandle,
        for_purpose,
        open_project,
        resolve,
        visible_projects,
        writing,
    )
    from app.access.policy import ItemPolicy, item_refusal, project_role, team_state

__all__ = [
    "ItemPolicy",
    "ProjectHandle",
    "for_purpose",
    "item_refusal",
    "open_project",
    "project_role",
    "resolve",
    "team_state",
    "visible_projects",
    "writing",
]
_POLICY = {"ItemPolicy", "item_refusal", "project_role", "team_state"}


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'app.access' has no attribute {name!r}")
    module = importlib.import_module("app.access." + ("policy" if name in _POLICY else "handle"))
    value = getattr(module, name)
    globals()[name] = value
    return value
