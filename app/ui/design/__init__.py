"""The Design tab: shaping the intent set. Candidate intents from unlabelled utterances
(:mod:`.clusters`) and merge / split what-ifs (:mod:`.whatif`); each section has its own
``build_<section>(ctx, project, user)``."""

from __future__ import annotations

from typing import Any

import gradio as gr

from app.context import AppContext
from app.services import data as data_svc
from app.ui.common import attempt, bind
from app.ui.design.clusters import build_clusters
from app.ui.design.whatif import build_whatif

__all__ = ["build_design_tab"]


def intent_choices(ctx: AppContext, proj: str | None) -> tuple[Any, ...]:
    """Fresh intent names for the section's pickers (4: the cluster's existing-intent picker,
    merge a, merge b, split)."""
    names = (attempt(lambda: data_svc.intent_names(ctx, proj))[0] or []) if proj else []
    return tuple(gr.update(choices=names) for _ in range(4))


def build_design_tab(ctx: AppContext, project: gr.Dropdown, user: gr.State) -> dict[str, Any]:
    """Lay out the Design tab. Returns its refresh hook (the intent pickers, run on select)."""
    clusters = build_clusters(ctx, project, user)
    whatif = build_whatif(ctx, project, user)
    pickers = [clusters["existing"], *whatif["pickers"]]
    return {"refresh": (bind(intent_choices, ctx), [project], pickers)}
