"""The Design tab: shaping the intent set, one section per sub-tab, each built by its own module
(``build_<section>(serving_state, project, user)``): conflicts and label issues (:mod:`.conflicts`),
candidate intents from unlabelled utterances (:mod:`.clusters`), merge / split what-ifs
(:mod:`.whatif`) and the out-of-scope trade-off (:mod:`.scope`)."""

from __future__ import annotations

from typing import Any

import gradio as gr

from app.access import ProjectHandle
from app.services.labelling import data as data_svc
from app.serving.state import ServingState
from app.ui.common import attempt, bind, problem
from app.ui.design.clusters import build_clusters
from app.ui.design.conflicts import build_conflicts
from app.ui.design.scope import build_scope
from app.ui.design.whatif import build_whatif
from storage.db import Database

__all__ = ["build_design_tab"]


def intent_choices(db: Database, p: ProjectHandle | None) -> tuple[Any, ...]:
    """Fresh intent names for the sections' pickers (4: the cluster's existing-intent picker,
    merge a, merge b, split) and the candidate intents' status line: why the pickers are empty
    when the names could not be read (else left as it is)."""
    names, err = attempt(lambda: data_svc.intent_names(db, p)) if p is not None else ([], None)
    said = problem(err, notify=False) if err else gr.skip()
    return (*(gr.update(choices=names or []) for _ in range(4)), said)


def build_design_tab(
    serving_state: ServingState, project: gr.Dropdown, user: gr.State
) -> dict[str, Any]:
    """Lay out the Design tab. ``refresh``: the events to run when the tab is opened."""
    with gr.Tabs(elem_id="design-sections"):
        with gr.Tab("Conflicts"):
            conflicts = build_conflicts(serving_state.live, project, user)
        with gr.Tab("Candidate intents"):
            clusters = build_clusters(serving_state.live, serving_state.maps, project, user)
        with gr.Tab("Merge / split what-if"):
            whatif = build_whatif(serving_state.factories, project, user)
        with gr.Tab("Out of scope"):
            scope = build_scope(serving_state.live, project, user)
    pickers = [clusters["existing"], *whatif["pickers"], clusters["status"]]
    return {
        "refresh": [
            conflicts["refresh"],
            scope["refresh"],
            (bind(intent_choices, serving_state.db), [project], pickers),
        ]
    }
