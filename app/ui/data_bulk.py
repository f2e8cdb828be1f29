"""The Data tab's bulk label: every row the table's filters match (all pages) gets one intent, as
one batch, after a preview that says what changes and what is protected — the same safe action
as a map lasso (:mod:`app.ui.bulk_preview`, :mod:`app.services.labelling.bulk`).

Label applies exactly the preview on screen: its token, read from the page when the button is
pressed, names the ids it counted. A filter, intent or choice changed since takes the preview's
token away at once (the button says it is counting) until the new one is shown."""

from __future__ import annotations

from typing import Any

import gradio as gr

from app.access import ProjectHandle
from app.access.actions import EDIT
from app.services.labelling import table as table_svc
from app.serving.live import LivePools
from app.ui import bulk_preview
from app.ui.bulk_preview import Previews
from app.ui.common import attempt, bind, problem
from app.ui.data_filters import counted_for, read_filters
from app.ui.guard import guarded

PREVIEW_ID, BUTTON_ID = "bulk-preview", "bulk-label"
# the Data tab's filters a preview is counted for, by elem_id (app/ui/data_tab.py)
FILTER_IDS = (
    "data-intent",
    "data-split",
    "data-predicted",
    "data-disagree",
    "data-below",
    "data-sort",
)


def preview(
    live: LivePools,
    p: ProjectHandle | None,
    q: table_svc.TableQuery,
    target: str | None,
    relabel: bool,
    previews: Previews | None,
    ask: float | None = None,
) -> tuple[str, Previews]:
    """What Label would do to every row the filters ``q`` match, before anything changes
    (``ask``: the page's recount it answers, :func:`app.ui.bulk_preview.ask_js`)."""
    if p is None or not target:
        return bulk_preview.shown(None, ask=ask), dict(previews or {})
    ids, err = attempt(lambda: table_svc.matching_ids(live, p, q))
    if err or ids is None:
        return bulk_preview.shown(None, problem(err or ""), ask), dict(previews or {})
    shown_for = counted_for(q, target, relabel)
    return bulk_preview.preview(live.db, p, ids, target, relabel, previews, shown_for, ask)


def label(
    live: LivePools,
    p: ProjectHandle,
    intent: str,
    split: str,
    search: str,
    predicted: str,
    disagree: bool,
    below: Any,
    sort: str,
    target: str | None,
    relabel: bool,
    previews: Previews | None,
    token: str,
) -> tuple[str, Any, Previews]:
    """Label exactly the preview the page showed (its ``token``), as one batch; refused while
    the filter widgets (a text typed but not submitted too), intent or choice on screen are not
    what it was counted for."""
    q = read_filters(intent, split, search, predicted, disagree, below, sort)
    if not target:
        return problem("Pick the intent to give them."), gr.update(), dict(previews or {})

    def recount(kept: Previews) -> tuple[str, Previews]:
        return preview(live, p, q, target, relabel, kept)

    showing = counted_for(q, target, relabel)
    return bulk_preview.apply(live.db, p, token, previews, showing, recount)


def build_bulk(
    live: LivePools,
    project: gr.Dropdown,
    query: gr.State,
    triggers: list[Any],
    filters: list[Any],
) -> dict[str, Any]:
    """Lay out the bulk label (in an accordion) and bind it. ``query`` holds the table's filters
    (:class:`app.services.labelling.table.TableQuery`); ``triggers`` are the events after which they are
    set (the preview is counted again after each); ``filters`` the filter widgets, whose values
    a Label press sends (:func:`app.ui.data_filters.read_filters`)."""
    with gr.Accordion("Label every row the filters show", open=False):
        target = gr.Dropdown(
            label="as intent", allow_custom_value=True, choices=[], elem_id="bulk-intent"
        )
        relabel = gr.Checkbox(
            label="relabel rows that have other intents too", value=False, elem_id="bulk-relabel"
        )
        plan = gr.HTML(elem_id=PREVIEW_ID)
        button = gr.Button("Label them", elem_id=BUTTON_ID)
        result = gr.Markdown(elem_id="bulk-result")  # never written over by a late preview
        token = gr.Textbox(visible=False)  # the page's token, filled when Label is pressed
        ask = gr.Number(0, visible=False)  # the page's recount a preview answers (its js)
    previews = gr.State({})
    quiet: dict[str, Any] = {"api_visibility": "private", "show_progress": "hidden"}
    counting = bulk_preview.counting_js(PREVIEW_ID, BUTTON_ID)
    recount = (
        bind(preview, live),
        [project, query, target, relabel, previews, ask],
        [plan, previews],
    )
    asked = bulk_preview.ask_js(PREVIEW_ID)
    for change in (target.change, relabel.change):
        change(None, None, None, js=counting, **quiet)
        change(*recount, js=asked, **quiet)
    for event in triggers:  # a filter or the project changed: the query is set, then counted
        event.then(*recount, js=asked, **quiet)
    done = button.click(
        guarded(EDIT, outputs=3)(bind(label, live)),
        [project, *filters, target, relabel, previews, token],
        [result, plan, previews],
        js=bulk_preview.token_js(PREVIEW_ID),
        **quiet,
    )
    # the widgets the preview is counted for, watched by the page (the search box counts once
    # Enter applies it: a text typed but not applied is the server's to refuse)
    widgets = [*FILTER_IDS, "bulk-intent", "bulk-relabel", "project"]
    watch = bulk_preview.watch_js(PREVIEW_ID, BUTTON_ID, widgets, ["data-search"])
    return {"target": target, "done": done, "counting": counting, "watch": watch}
