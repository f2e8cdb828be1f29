"""The Data tab's bulk label: every row the table's filters match (all pages) gets one intent, as
one batch, after a preview that says what changes and what is protected — the same safe action
as a map lasso (:mod:`app.services.bulk`).

Label does exactly what the preview said: the preview keeps the ids it counted (and the filters,
intent and choice it counted them for) in per-user state, and Label labels those ids only. When
the filters, the intent or the choice changed since (or a row was labelled meanwhile), Label
refuses, shows the new preview and changes nothing; a second press labels what that one says."""

from __future__ import annotations

from typing import Any

import gradio as gr

from app.context import AppContext
from app.services import bulk as bulk_svc
from app.services import table as table_svc
from app.ui.common import attempt, bind, ok, problem
from app.ui.guard import guarded

Previewed = dict[str, Any] | None  # what the preview counted: see :func:`preview`


def _asked(filters: tuple[Any, ...], target: str | None, relabel: bool) -> list[Any]:
    """What a preview is for, comparable across events (JSON-safe)."""
    return [*(None if f is None else str(f) for f in filters), target, bool(relabel)]


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
) -> tuple[str, Previewed]:
    """What Label would do to the filtered rows, before anything changes: (the sentence, what
    it counted: the ids, the ids that would change, and the filters, intent and choice)."""
    filters = (intent, split, search, predicted, disagree, below, sort)
    if not proj or not target:
        return "", None

    def run() -> tuple[list[int], bulk_svc.BulkPlan]:
        ids = table_svc.matching_ids(ctx, proj, query_of(*filters))
        return ids, bulk_svc.plan_label(ctx, proj, ids, [target], relabel_labelled=relabel)

    done, err = attempt(run)
    if err or done is None:
        return problem(err or ""), None
    ids, plan = done
    counted = {
        "project": proj,
        "asked": _asked(filters, target, relabel),
        "ids": ids,
        "change": list(plan.change),
    }
    return plan.summary(), counted


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
    previewed: Previewed,
) -> tuple[str, Any, Previewed]:
    """Label exactly the previewed rows as one batch: (result, preview, what is previewed).
    Refused, with a fresh preview, when the filters, intent or choice changed since."""
    filters = (intent, split, search, predicted, disagree, below, sort)
    if not target:
        return problem("Pick the intent to give them."), gr.update(), previewed
    asked = _asked(filters, target, relabel)
    if not previewed or previewed.get("project") != proj or previewed.get("asked") != asked:
        summary, fresh = preview(ctx, query_of, proj, *filters, target=target, relabel=relabel)
        return (
            problem(
                "The filters changed since the preview: nothing was labelled. Check the new "
                "preview, then press Label again."
            ),
            summary,
            fresh,
        )

    def run() -> bulk_svc.BulkPlan:
        return bulk_svc.label_many(
            ctx,
            proj,
            previewed["ids"],
            [target],
            relabel_labelled=relabel,
            expected=previewed["change"],
        )

    done, err = attempt(run)
    if err or done is None:
        summary, fresh = preview(ctx, query_of, proj, *filters, target=target, relabel=relabel)
        return problem(err or ""), summary, fresh
    left = (
        f" Left {len(done.labelled)} already labelled as they were."
        if done.labelled and not done.relabel_labelled
        else ""
    )
    message = ok(
        f"Labelled {len(done.change)} utterance(s) as {done.target_text}.{left}"
        " One Undo reverts the whole batch."
    )
    return message, "", None


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
    previewed = gr.State(None)
    inputs = [project, *filters, target, relabel]
    quiet: dict[str, Any] = {"api_visibility": "private", "show_progress": "hidden"}
    # A filter change re-counts the preview (the table's search counts when submitted).
    changes = [target.change, relabel.change, project.change]
    changes += [getattr(f, "submit" if isinstance(f, gr.Textbox) else "change") for f in filters]
    for change in changes:
        change(bind(preview, ctx, query_of), inputs, [plan, previewed], **quiet)
    done = button.click(
        guarded(ctx, "designer", outputs=3)(bind(label, ctx, query_of)),
        [*inputs, previewed],
        [result, plan, previewed],
        **quiet,
    )
    return {"target": target, "done": done}
