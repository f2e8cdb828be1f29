"""The Data tab's bulk label: every row the table's filters match (all pages) gets one intent, as
one batch, after a preview that says what changes and what is protected — the same safe action
as a map lasso (:mod:`app.services.bulk`)."""

from __future__ import annotations

from typing import Any

import gradio as gr

from app.context import AppContext
from app.services import bulk as bulk_svc
from app.services import table as table_svc
from app.ui.common import attempt, bind, ok, problem
from app.ui.guard import guarded


def _ids(ctx: AppContext, proj: str, query: table_svc.TableQuery) -> list[int]:
    return table_svc.matching_ids(ctx, proj, query)


def preview(
    ctx: AppContext,
    query_of: Any,
    proj: str,
    intent: str,
    split: str,
    search: str,
    predicted: str,
    disagree: bool,
    below: Any,
    sort: str,
    target: str | None,
    relabel: bool,
) -> str:
    """What Label would do to the filtered rows, before anything changes."""
    filters = (intent, split, search, predicted, disagree, below, sort)
    if not proj or not target:
        return ""
    plan, err = attempt(
        lambda: bulk_svc.plan_label(
            ctx, proj, _ids(ctx, proj, query_of(*filters)), [target], relabel_labelled=relabel
        )
    )
    return problem(err or "") if err or plan is None else plan.summary()


def label(
    ctx: AppContext,
    query_of: Any,
    proj: str,
    intent: str,
    split: str,
    search: str,
    predicted: str,
    disagree: bool,
    below: Any,
    sort: str,
    target: str | None,
    relabel: bool,
) -> str:
    """Label the filtered rows as one batch (already labelled rows left unless ``relabel``)."""
    filters = (intent, split, search, predicted, disagree, below, sort)
    if not target:
        return problem("Pick the intent to give them.")

    def run() -> bulk_svc.BulkPlan:
        ids = _ids(ctx, proj, query_of(*filters))
        return bulk_svc.label_many(ctx, proj, ids, [target], relabel_labelled=relabel)

    done, err = attempt(run)
    if err or done is None:
        return problem(err or "")
    left = (
        f" Left {len(done.labelled)} already labelled as they were."
        if done.labelled and not done.relabel_labelled
        else ""
    )
    return ok(
        f"Labelled {len(done.change)} utterance(s) as {done.target_text}.{left}"
        " One Undo reverts the whole batch."
    )


def build_bulk(
    ctx: AppContext, project: gr.Dropdown, filters: list[Any], query_of: Any
) -> dict[str, Any]:
    """Lay out the bulk label (in an accordion) and bind it. ``filters`` are the table's filter
    components after the project; ``query_of(*their values)`` makes the table's query."""
    with gr.Accordion("Label every row the filters show", open=False):
        target = gr.Dropdown(
            label="as intent", allow_custom_value=True, choices=[], elem_id="bulk-intent"
        )
        relabel = gr.Checkbox(label="relabel rows that have other intents too", value=False)
        plan = gr.Markdown(elem_id="bulk-preview")
        button = gr.Button("Label them", elem_id="bulk-label")
        result = gr.Markdown(elem_id="bulk-result")  # never written over by a late preview
    inputs = [project, *filters, target, relabel]
    quiet: dict[str, Any] = {"api_visibility": "private", "show_progress": "hidden"}
    for change in (target.change, relabel.change):
        change(bind(preview, ctx, query_of), inputs, [plan], **quiet)
    done = button.click(
        guarded(ctx, "designer")(bind(label, ctx, query_of)), inputs, [result], **quiet
    )
    return {"target": target, "done": done}
