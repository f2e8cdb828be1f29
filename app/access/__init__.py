"""Who may do what, asked at one door: a project resolved and authorised once at the edge
(:mod:`app.access.handle`) and one rule for every change of an item (:mod:`app.access.policy`)."""

from __future__ import annotations

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
