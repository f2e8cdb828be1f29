"""The Map tab: the project's utterances in 2D, before/after side by side, lasso to label,
click a point for its explanation. Callbacks only call :mod:`app.services.design.maps` and
:mod:`app.services.labelling.data`."""

from __future__ import annotations

import logging
import re
from typing import Any

import gradio as gr

from app.access import ProjectHandle
from app.access.actions import EDIT
from app.services.design import map_region as region_svc
from app.services.design import maps as svc
from app.services.labelling import data as data_svc
from app.serving.factories import FactoryBuilder
from app.serving.map_store import MapStore
from app.ui import bulk_preview
from app.ui.bulk_preview import Previews
from app.ui.common import attempt, bind, md_sentence, md_text, ok, problem
from app.ui.guard import guarded
from app.ui.map_js import BIND_JS
from app.ui.map_view import (
    ACTIVE_CHOICE,
    BASE_CHOICE,
    VIEW_CHOICES,
    poll_render,
    render,
)
from core.projection import PROJECTIONS
from storage.db import Database
from storage.ids import parse_id

logger = logging.getLogger(__name__)

HELP = (
    "Each dot is an utterance, coloured by its intent (● train, ◆ test, ✕ unlabelled). "
    "Tight, separate clusters mean the encoder tells the intents apart. **Compare** puts the "
    "two versions side by side (the frozen base encoder, the active model or any version), with "
    "how each intent moved below them, and silhouette (higher is better), alignment "
    "(lower) and uniformity. Lasso or box-select points, then label them or move them to a split. "
    "Click a point to see why it got its intent: the explanation is the k-NN decision rule itself "
    "(its nearest labelled examples), not an after-the-fact approximation."
)
HIGHLIGHT_CHOICES = ["none", "misclassified", "low_margin", "unlabelled"]
DIFF_HEADERS = ["intent", "examples", "spread", "tighter by", "nearest intent", "gap", "further by"]
SPLITS = ["train", "test", "unlabelled"]
PREVIEW_ID, BUTTON_ID = "map-preview", "map-label"


def parse_ids(value: str | None) -> list[int]:
    """Ids typed or pasted as ``12, 15 18``, each an id (``1.5`` is refused: no 1 and 5)."""
    return [parse_id(x, "utterance id") for x in re.split(r"[\s,;]+", value or "") if x]


def evidence_markdown(ex: dict[str, Any]) -> str:
    """The explanation card as Markdown; user text escaped."""
    esc = md_text
    sentence = md_sentence(ex.get("sentence", ""))
    lines = [f"**“{esc(ex['text'])}”** (#{ex.get('id')}, {esc(str(ex.get('split', '')))})", ""]
    if ex.get("gold"):
        verdict = "✓ correct" if ex.get("correct") else "✗ wrong"
        lines += [f"Gold: {esc(', '.join(ex['gold']))} · {verdict}", ""]
    lines += [sentence, "", f"score {ex['score']:.2f} · margin {ex['margin']:.2f}"]
    if ex.get("ambiguous"):
        lines.append("⚠ Close call: the runner-up is almost as similar.")
    if ex.get("borderline"):
        lines.append("⚠ " + md_sentence(ex["borderline_reason"]))
    if ex.get("neighbours"):
        lines += ["", "Nearest labelled examples:"]
        lines += [
            f"- “{esc(n['text'])}” — {esc(', '.join(n['labels']))} ({n['similarity']:.2f})"
            for n in ex["neighbours"]
        ]
    return "\n".join(lines)


def explain_point(factories: FactoryBuilder, p: ProjectHandle | None, value: str) -> str:
    ids = parse_ids(value)
    if p is None or not ids:
        return ""
    ex, err = attempt(lambda: svc.explain_utterance(factories, p, ids[0]))
    return problem(err or "") if err or ex is None else evidence_markdown(ex)


def _shown_for(ids_text: str, intent: str | None, relabel: bool) -> list[Any]:
    return [parse_ids(ids_text), intent, bool(relabel)]


def preview(
    db: Database,
    p: ProjectHandle | None,
    ids_text: str,
    intent: str | None,
    relabel: bool,
    previews: Previews | None,
) -> tuple[str, Previews]:
    """What Label would do to the selection, before anything changes
    (:mod:`app.ui.bulk_preview`)."""
    shown_for = _shown_for(ids_text, intent, relabel)
    return bulk_preview.preview(db, p, parse_ids(ids_text), intent, relabel, previews, shown_for)


def label(
    db: Database,
    p: ProjectHandle,
    ids_text: str,
    intent: str | None,
    relabel: bool,
    previews: Previews | None,
    token: str,
) -> tuple[str, Any, Previews]:
    """Label exactly the preview the page showed (its ``token``: the selection, intent and
    choice it counted), as one batch; refused, with the preview shown again, while a new one
    is being counted (a lasso and a click on Label can cross), when the selection, intent or
    choice on screen is not what it was counted for, or when rows changed since."""
    if not parse_ids(ids_text):
        return (
            problem("Select points on the map first (lasso or box select)."),
            gr.update(),
            dict(previews or {}),
        )
    if not intent:
        return problem("Pick the intent to give them."), gr.update(), dict(previews or {})

    def recount(kept: Previews) -> tuple[str, Previews]:
        return preview(db, p, ids_text, intent, relabel, kept)

    showing = _shown_for(ids_text, intent, relabel)
    return bulk_preview.apply(db, p, token, previews, showing, recount)


def select_region(maps: MapStore, p: ProjectHandle | None, region: str) -> tuple[Any, str]:
    """Every row inside the region a lasso drew on a map that draws a sample of its rows, drawn
    or not (:func:`app.services.design.map_region.select_region`), as the selected ids."""
    if p is None:
        return gr.update(), ""
    found, err = attempt(lambda: region_svc.select_region(maps, p, region))
    if err or found is None:
        return gr.update(), problem(err or "")
    ids, rows = found
    return ",".join(map(str, ids)), ok(
        f"Selected {len(ids):,} of the {rows:,} utterances inside the region."
    )


def move(db: Database, p: ProjectHandle, ids_text: str, split: str) -> str:
    ids = parse_ids(ids_text)
    if not ids:
        return problem("Select points on the map first (lasso or box select).")
    n, err = attempt(lambda: data_svc.move_split(db, p, ids, split))
    return problem(err) if err else ok(f"Moved {n} utterances to {split}.")


def build_map_tab(maps: MapStore, project: gr.Dropdown, user: gr.State) -> dict[str, Any]:
    """Lay out the Map tab and bind its events. Returns its refresh hook."""
    # Every control in one row of pickers (compare mode adds its two versions, and may wrap):
    # at 1280x720 the map takes 60 % of the screen's height and more (issue 58 item 2).
    with gr.Row(equal_height=True, elem_id="map-controls"):
        method = gr.Dropdown(
            list(PROJECTIONS), value="umap", label="Projection", scale=1, min_width=110
        )
        view = gr.Dropdown(
            VIEW_CHOICES, value=VIEW_CHOICES[0], label="View", scale=2, min_width=170
        )
        left = gr.Dropdown(
            [BASE_CHOICE, ACTIVE_CHOICE],
            value=BASE_CHOICE,
            label="Left",
            scale=2,
            min_width=120,
            visible=False,
        )
        right = gr.Dropdown(
            [BASE_CHOICE, ACTIVE_CHOICE],
            value=ACTIVE_CHOICE,
            label="Right",
            scale=2,
            min_width=120,
            visible=False,
        )
        highlight = gr.Dropdown(
            HIGHLIGHT_CHOICES, value="none", label="Highlight", scale=2, min_width=140
        )
        focus = gr.Dropdown(
            label="Show intents (type to search; the others turn grey)",
            multiselect=True,
            choices=[],
            scale=4,
            min_width=240,
            elem_id="map-focus",
        )
        names = gr.Checkbox(
            label="intent names", value=True, scale=1, min_width=150, elem_id="map-names"
        )
        refresh_btn = gr.Button("Refresh", scale=0, min_width=90, elem_id="map-refresh")
    status = gr.Markdown(elem_id="map-status")  # one line, over the figure's top margin (css)
    plot = gr.Plot(elem_id="map-plot", label="Map", show_label=False)
    # the figure's size on the page ("1216x465"), kept by the page's script (map_js.py): the
    # names are placed for it
    size = gr.Textbox(elem_id="map-size", elem_classes=["hidden-trigger"], max_lines=1)
    # the ranges the person zoomed to ("x0,x1,y0,y1"; empty: all), kept by the page's script:
    # a zoom into the crowded centre names what fits there
    zoom = gr.Textbox(elem_id="map-zoom", elem_classes=["hidden-trigger"], max_lines=1)
    # Below the map: at 1280x720 the map itself needs the height above the fold.
    with gr.Accordion("How to read the map", open=False):
        gr.Markdown(HELP)
    poll = gr.Timer(2.0, active=False)
    with gr.Row():
        selected = gr.Textbox(
            label="Selected ids (lasso, or type)", elem_id="map-selected", scale=3, max_lines=2
        )
        label_as = gr.Dropdown(
            label="Label selection as",
            allow_custom_value=True,
            choices=[],
            scale=2,
            elem_id="map-label-as",
        )
        relabel = gr.Checkbox(
            label="relabel labelled points too",
            value=False,
            scale=2,
            elem_id="map-relabel",
        )
        label_btn = gr.Button("Label", scale=1, elem_id=BUTTON_ID)
        split_to = gr.Dropdown(SPLITS, value="test", label="Move selection to", scale=1)
        split_btn = gr.Button("Move", scale=1, elem_id="map-move")
    # What Label would do (updated as the selection changes) and what an action did: two lines,
    # so a late preview never writes over the result.
    plan = gr.HTML(elem_id=PREVIEW_ID)
    token = gr.Textbox(visible=False)  # the page's preview token, filled when Label is pressed
    action = gr.Markdown(elem_id="map-action")
    # A lasso's region on a map drawn from a sample, written by the page's script (map_js.py):
    # the server selects every row inside it
    region = gr.Textbox(elem_id="map-region", elem_classes=["hidden-trigger"], max_lines=1)
    region_btn = gr.Button("region", elem_id="map-region-btn", elem_classes=["hidden-trigger"])
    # Written by the plot's click handler (ids as text); internal, so hidden.
    clicked = gr.Textbox(
        label="Clicked id", elem_id="map-clicked", max_lines=1, elem_classes=["hidden-trigger"]
    )
    explain_btn = gr.Button("Explain", elem_id="map-explain-btn", elem_classes=["hidden-trigger"])
    explanation = gr.Markdown(elem_id="map-explanation")
    moved = gr.Dataframe(
        headers=DIFF_HEADERS,
        label="How each intent moved from left to right (spread: mean distance to the intent's "
        "centre, lower is tighter; gap: distance to the nearest other intent, higher is further "
        "apart; biggest movement first)",
        interactive=False,
        visible=False,
        max_height=320,
        elem_id="map-diff",
    )

    inputs = [project, method, view, highlight, focus, names, left, right, size]
    zoom_btn = gr.Button("zoom", elem_id="map-zoom-btn", elem_classes=["hidden-trigger"])
    outputs = [plot, status, poll, label_as, focus, left, right, moved]
    for trigger in (
        refresh_btn.click,
        method.change,
        view.change,
        left.input,
        right.input,
        highlight.change,
        focus.change,
        names.change,
    ):
        trigger(bind(render, maps), inputs, outputs, api_visibility="private").then(
            None, None, None, js=BIND_JS, api_visibility="private"
        )
    poll.tick(
        bind(poll_render, maps), inputs, outputs, api_visibility="private", show_progress="hidden"
    ).then(None, None, None, js=BIND_JS, api_visibility="private")
    # a zoom (or its undoing): the names placed for the ranges on screen (map_js.py)
    zoom_btn.click(
        bind(render, maps),
        [*inputs, zoom],
        outputs,
        api_visibility="private",
        show_progress="hidden",
    )
    clicked.submit(
        bind(explain_point, maps.factories),
        [project, clicked],
        [explanation],
        api_name="map_explain",
    )
    explain_btn.click(
        bind(explain_point, maps.factories),
        [project, clicked],
        [explanation],
        api_visibility="private",
    )
    region_btn.click(
        bind(select_region, maps),
        [project, region],
        [selected, action],
        api_visibility="private",
        show_progress="hidden",
    )
    previews = gr.State({})  # what the previews shown counted: Label applies the one on screen
    counting = bulk_preview.counting_js(PREVIEW_ID, BUTTON_ID)
    for change in (selected.change, label_as.change, relabel.change):
        change(None, None, None, js=counting, api_visibility="private")
        change(
            bind(preview, maps.db),
            [project, selected, label_as, relabel, previews],
            [plan, previews],
            api_visibility="private",
            show_progress="hidden",
        )
    label_btn.click(
        guarded(EDIT, outputs=3)(bind(label, maps.db)),
        [project, selected, label_as, relabel, previews, token],
        [action, plan, previews],
        js=bulk_preview.token_js(PREVIEW_ID),
        api_name="map_label",
    ).then(bind(render, maps), inputs, outputs, api_visibility="private").then(
        None, None, None, js=BIND_JS, api_visibility="private"
    )
    split_btn.click(
        guarded(EDIT)(bind(move, maps.db)),
        [project, selected, split_to],
        [action],
        api_name="map_move",
    ).then(bind(render, maps), inputs, outputs, api_visibility="private").then(
        None, None, None, js=BIND_JS, api_visibility="private"
    )
    widgets = ["map-selected", "map-label-as", "map-relabel", "project"]
    watch = bulk_preview.watch_js(PREVIEW_ID, BUTTON_ID, widgets)
    return {"refresh": (bind(render, maps), inputs, outputs), "js": BIND_JS, "watch": watch}
