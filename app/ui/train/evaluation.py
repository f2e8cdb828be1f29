"""Train tab, Evaluation section: the active model on the test split now. Per-intent precision,
recall and F1 and the ranked confused pairs as tables; a click opens the test utterances behind a
row (or a heatmap cell), and each can be relabelled, moved to train or deleted right there, by the
same safe, undoable actions as the Data tab. These are test rows: "Relabel as" starts empty (never
the model's prediction) and every fix needs "I'm changing a test label" ticked first. The heatmap shows the N most confused intents."""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from app import plots
from app.access import ProjectHandle
from app.access.actions import EDIT
from app.services.labelling import data as data_svc
from app.services.models import evaluation as eval_svc
from app.serving.factories import FactoryBuilder
from app.ui.common import (
    attempt,
    bind,
    breakable,
    confirm_test_box,
    md_text,
    ok,
    problem,
    unbroken,
)
from app.ui.guard import guarded
from storage.db import Database
from storage.ids import parse_id

# Clicking a confusion-matrix cell writes "gold → predicted" (its customdata: the names as
# stored; the axes show them escaped) into a hidden textbox.
_JS_BIND_CONFUSION = """
() => {
  if (window.__studioConfusionWatcher) return [];
  window.__studioConfusionWatcher = setInterval(() => {
    const gd = document.querySelector('#eval-confusion .js-plotly-plot');
    if (!gd || !gd.on || gd.__studioBound) return;
    gd.__studioBound = true;
    gd.on('plotly_click', (e) => {
      const p = e && e.points && e.points[0];
      const el = document.querySelector('#eval-cell textarea, #eval-cell input');
      if (!p || !el || !p.customdata) return;
      el.value = p.customdata[0] + ' → ' + p.customdata[1];  // the names as stored, not as drawn
      el.dispatchEvent(new Event('input', {bubbles: true}));
      setTimeout(() => document.querySelector('#eval-cell-btn')?.click(), 50);
    });
  }, 300);
  return [];
}
"""


HEATMAP_N = 20
INTENT_COLUMNS = ["intent", "precision", "recall", "F1", "support"]
PAIR_COLUMNS = ["gold", "predicted as", "count", "share"]
ROW_COLUMNS = ["id", "text", "gold", "predicted"]


def evaluate(
    factories: FactoryBuilder, p: ProjectHandle | None, top_n: float = HEATMAP_N
) -> tuple[Any, ...]:
    """Headline, per-intent table, ranked confused pairs, F1 bars and the heatmap of the
    ``top_n`` most confused intents (single-label); the confusion itself is kept for re-drawing."""
    empty = (None, None, None, None, None)
    if p is None:
        return problem("Pick a project first."), *empty
    m, err = attempt(lambda: eval_svc.live_evaluation(factories, p))
    if err or m is None:
        return problem(err or ""), *empty
    per_intent = m.f1_by_intent()
    table = pd.DataFrame(
        [
            [name, round(v["precision"], 2), round(v["recall"], 2), round(v["f1"], 2), v["support"]]
            for name, v in sorted(m.per_intent.items(), key=lambda kv: kv[1]["f1"])
            if v["support"]
        ],
        columns=INTENT_COLUMNS,
    )
    if m.multi_label:
        head = (
            f"{m.version_label} + multi-label head (θ = {m.threshold or 0:.2f}): micro-F1 "
            f"**{m.micro_f1 or 0:.2f}**, macro-F1 **{m.macro_f1 or 0:.2f}**, exact match "
            f"**{m.exact_match or 0:.2f}** on {m.n} utterances ({m.split})."
        )
        pairs = pd.DataFrame(
            m.cooccurrence, columns=["a", "b", "gold", "predicted", "both", "recall"]
        )
        return head, table, pairs, plots.f1_bars(per_intent), None, None
    confusion = m.confusion
    pairs = pd.DataFrame(
        plots.confused_pairs(confusion["labels"], confusion["matrix"]), columns=PAIR_COLUMNS
    )
    head = (
        f"{m.version_label}: accuracy **{m.accuracy or 0:.1%}**, macro-F1 "
        f"**{m.macro_f1 or 0:.2f}** on {m.n} test utterances. Click a row of either table for "
        "the utterances behind it, then relabel, move or delete them here."
    )
    return (
        head,
        table,
        pairs,
        plots.f1_bars(per_intent),
        heatmap(confusion, top_n),
        confusion,
    )


def heatmap(confusion: dict[str, Any] | None, top_n: float) -> Any:
    """The heatmap of the ``top_n`` most confused intents."""
    if not confusion:
        return None
    names, sub = plots.most_confused(confusion["labels"], confusion["matrix"], int(top_n))
    return plots.confusion_heatmap(names, sub)


def _rows_frame(rows: list[Any]) -> pd.DataFrame:
    """The test utterances as the table shows them: names that break only after an underscore
    (:func:`app.ui.common.breakable`; :func:`pick_row` reads them back)."""
    return pd.DataFrame(
        [
            {
                "id": r.id,
                "text": r.text,
                "gold": ", ".join(breakable(g) for g in r.gold),
                "predicted": breakable(r.predicted or ""),
            }
            for r in rows
        ],
        columns=ROW_COLUMNS,
    )


def show_cell(factories: FactoryBuilder, p: ProjectHandle | None, value: str) -> Any:
    """The test utterances behind ``gold → predicted`` (or all misses of ``gold →``)."""
    gold, sep, predicted = (value or "").partition("→")
    if p is None or not sep:
        return None
    rows, err = attempt(
        lambda: eval_svc.confusions(factories, p, gold.strip(), predicted.strip() or None)
    )
    if err or rows is None:
        return pd.DataFrame({"problem": [err]})
    return _rows_frame(rows)


def rows_after_fix(
    factories: FactoryBuilder, p: ProjectHandle | None, value: str, said: str
) -> Any:
    """The utterances behind the cell again after a fix; after a refused one they stay."""
    return gr.update() if (said or "").startswith("⚠") else show_cell(factories, p, value)


def pick_pair(frame: pd.DataFrame, evt: gr.SelectData) -> str:
    """A click on a confused pair (or an intent's row: all its misses) as ``gold → predicted``."""
    row = frame.iloc[int(evt.index[0] if isinstance(evt.index, list | tuple) else evt.index)]
    if "predicted as" in row:
        return f"{row['gold']} → {row['predicted as']}"
    return f"{row['intent']} →"


def pick_row(frame: pd.DataFrame, evt: gr.SelectData) -> tuple[Any, str, Any, Any]:
    """The clicked test utterance: its id, what it is, an empty "Relabel as" (never the
    model's prediction: one click would bend the test set towards the model) and the test-label
    confirmation unticked."""
    row = frame.iloc[int(evt.index[0] if isinstance(evt.index, list | tuple) else evt.index)]
    gold, predicted = unbroken(str(row["gold"])), unbroken(str(row["predicted"]))
    what = (
        f"#{int(row['id'])} “{md_text(row['text'])}” (gold {md_text(gold)}, predicted "
        f"{md_text(predicted)}) · **test row**"
    )
    return int(row["id"]), what, gr.update(value=None), gr.update(value=False)


def act(
    db: Database,
    action: str,
    p: ProjectHandle,
    uid: float | None,
    intent: str | None,
    confirmed: bool = False,
) -> str:
    """Fix the selected test utterance in place: relabel it (as the intent the designer picked),
    move it to train, or delete it; each needs the test-label confirmation ticked."""
    if not uid:
        return problem("Click an utterance in the table first.")
    said, err = attempt(
        lambda: eval_svc.fix_test_row(
            db, p, parse_id(uid, "utterance id"), action, intent, confirmed=bool(confirmed)
        )
    )
    if err or said is None:
        return problem(err or "")
    return ok(f"{said} (undo in the Data or Activity tab). Evaluate again to update the numbers.")


def relabel_choices(db: Database, p: ProjectHandle | None) -> tuple[Any, Any]:
    """Every intent of the project for "Relabel as", and the fix line: why there are none when
    they could not be read (else left as it is)."""
    if p is None:
        return gr.update(choices=[]), gr.skip()
    names, err = attempt(lambda: data_svc.intent_names(db, p))
    return gr.update(choices=names or []), problem(err, notify=False) if err else gr.skip()


def build_evaluation_section(factories: FactoryBuilder, project: gr.Dropdown) -> None:
    # Sized to fit a 1280x720 screen: the ranked tables (one at a time) on the left, the
    # utterances behind the clicked row and their fixes on the right, the charts folded away.
    with gr.Row(equal_height=True):
        status = gr.Markdown(
            "**The active model on the test split**: press Evaluate.", elem_id="eval-status"
        )
        evaluate_btn = gr.Button("Evaluate", elem_id="evaluate", scale=0, min_width=140)
    confusion = gr.State(None)
    with gr.Row():
        with gr.Column(scale=1), gr.Tabs():
            with gr.Tab("Confused pairs, most first"):
                pairs = gr.Dataframe(
                    headers=PAIR_COLUMNS,
                    interactive=False,
                    max_height=215,
                    column_widths=["38%", "38%", "12%", "12%"],
                    show_label=False,
                    elem_id="worst",
                )
            with gr.Tab("Per intent, worst F1 first"):
                intents = gr.Dataframe(
                    headers=INTENT_COLUMNS,
                    interactive=False,
                    max_height=215,
                    column_widths=["44%", "14%", "14%", "14%", "14%"],
                    show_label=False,
                    elem_id="eval-intents",
                )
        with gr.Column(scale=1):
            cell_rows = gr.Dataframe(
                headers=ROW_COLUMNS,
                datatype=["number", "str", "markdown", "markdown"],
                interactive=False,
                wrap=True,
                # the names read whole at 1440x900: they break after an underscore, in wider
                # columns than the text's share (issue 65, item 7)
                column_widths=["9%", "37%", "27%", "27%"],
                max_height=170,
                label="Test utterances behind the row you click (click one to fix it)",
                elem_id="eval-rows",
            )
            picked_id = gr.Number(visible=False)  # an id: parse_id reads it, never rounded
            picked = gr.Markdown("Click an utterance above to fix it.", elem_id="eval-picked")
            with gr.Row(equal_height=True):
                relabel_as = gr.Dropdown(
                    [],
                    value=None,
                    label="Relabel as (pick the right intent)",
                    allow_custom_value=True,
                    scale=3,
                    min_width=160,
                    elem_id="eval-relabel-as",
                )
                relabel_btn = gr.Button(
                    "Relabel", scale=1, min_width=80, size="sm", elem_id="eval-relabel"
                )
            with gr.Row(equal_height=True):
                confirm = confirm_test_box("eval-confirm-test", scale=2, min_width=150)
                move_btn = gr.Button("Move to train", size="sm", scale=1, min_width=80)
                delete_btn = gr.Button("Delete", variant="stop", size="sm", scale=1, min_width=60)
            fix_status = gr.Markdown(elem_id="eval-fix")
    # Written by a table click or the heatmap's click handler; internal, so hidden.
    cell = gr.Textbox(
        label="Confusion cell (gold → predicted)",
        elem_id="eval-cell",
        max_lines=1,
        elem_classes=["hidden-trigger"],
    )
    cell_btn = gr.Button("Show", elem_id="eval-cell-btn", elem_classes=["hidden-trigger"])
    with gr.Accordion("Charts: F1 bars and the confusion heatmap", open=False):
        top_n = gr.Slider(5, 100, value=HEATMAP_N, step=1, label="Heatmap: most confused intents")
        with gr.Row():
            f1_plot = gr.Plot(label="Per-intent F1", elem_id="eval-f1")
            confusion_plot = gr.Plot(
                label="Confusion matrix (click a cell)", elem_id="eval-confusion"
            )
    quiet: dict[str, Any] = {"api_visibility": "private"}
    evaluate_btn.click(
        bind(evaluate, factories),
        [project, top_n],
        [status, intents, pairs, f1_plot, confusion_plot, confusion],
        **quiet,
    ).then(bind(relabel_choices, factories.db), [project], [relabel_as, fix_status], **quiet).then(
        None, None, None, js=_JS_BIND_CONFUSION, **quiet
    )
    top_n.release(heatmap, [confusion, top_n], [confusion_plot], **quiet).then(
        None, None, None, js=_JS_BIND_CONFUSION, **quiet
    )
    intents.select(pick_pair, [intents], [cell], **quiet)
    pairs.select(pick_pair, [pairs], [cell], **quiet)
    for trigger in (cell_btn.click, cell.change):
        trigger(bind(show_cell, factories), [project, cell], [cell_rows], **quiet)
    cell_rows.select(pick_row, [cell_rows], [picked_id, picked, relabel_as, confirm], **quiet)
    for button, action in ((relabel_btn, "relabel"), (move_btn, "move"), (delete_btn, "delete")):
        button.click(
            guarded(EDIT)(bind(act, factories.db, action)),
            [project, picked_id, relabel_as, confirm],
            [fix_status],
            **quiet,
        ).then(bind(rows_after_fix, factories), [project, cell, fix_status], [cell_rows], **quiet)
