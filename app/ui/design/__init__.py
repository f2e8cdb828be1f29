"""The Design tab: sections that help shape the intents themselves, each built by its own
module (``build_<section>(ctx, project, user)``, returning its ``refresh`` event). Add a section
by adding its builder to :data:`SECTIONS`."""

from __future__ import annotations

from typing import Any

import gradio as gr

from app.context import AppContext
from app.ui.design.conflicts import build_conflicts
from app.ui.design.scope import build_scope

SECTIONS = [build_scope, build_conflicts]


def build_design_tab(ctx: AppContext, project: gr.Dropdown, user: gr.State) -> dict[str, Any]:
    """Lay out every section; ``refresh``: the events to run when the tab is opened."""
    built = [section(ctx, project, user) for section in SECTIONS]
    return {"refresh": [b["refresh"] for b in built]}
