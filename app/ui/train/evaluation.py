"""Train tab, Evaluation section: the active model on the test split now (per-intent F1, the
confusion matrix with click-through to the utterances of a cell, the most confused pairs)."""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from app import plots
from app.context import AppContext
from app.services import evaluation as eval_svc
from app.ui.common import attempt, bind, problem

# Clicking a confusion-matrix cell writes "gold → predicted" into a hidden textbox.
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
      if (!p || !el) return;
      el.value = p.y + ' → ' + p.x;
      el.dispatchEvent(new Event('input', {bubbles: true}));
      setTimeout(() => document.querySelector('#eval-cell-btn')?.click(), 50);
    });
  }, 300);
  return [];
}
"""


def evaluate(ctx: AppContext, proj: str | None) -> tuple[Any, ...]:
    """Headline, F1 bars, confusion heatmap (single-label) and the worst pairs."""
    if not proj:
        return problem("Pick a project first."), None, None, None
    m, err = attempt(lambda: eval_svc.live_evaluation(ctx, proj))
    if err or m is None:
        return problem(err or ""), None, None, None
    per_intent = {k: v["f1"] for k, v in m["per_intent"].items() if v["support"]}
    if m.get("multi_label"):
        head = (
            f"{m['version_label']} + multi-label head (θ = {m['threshold']:.2f}): micro-F1 "
            f"**{m['micro_f1']:.3f}**, macro-F1 **{m['macro_f1']:.3f}**, exact match "
            f"**{m['exact_match']:.3f}** on {int(m['n'])} utterances ({m['split']})."
        )
        pairs = pd.DataFrame(
            m["cooccurrence"], columns=["a", "b", "gold", "predicted", "both", "recall"]
        )
        return head, plots.f1_bars(per_intent), None, pairs
    labels, matrix = m["confusion"]["labels"], m["confusion"]["matrix"]
    pairs = pd.DataFrame(
        plots.worst_pairs(labels, matrix), columns=["gold", "predicted as", "count"]
    )
    head = (
        f"{m['version_label']}: accuracy **{m['accuracy']:.3f}**, macro-F1 "
        f"**{m['macro_f1']:.3f}** on {m['n']} test utterances."
    )
    return head, plots.f1_bars(per_intent), plots.confusion_heatmap(labels, matrix), pairs


def show_cell(ctx: AppContext, proj: str | None, value: str) -> Any:
    """The test utterances behind a confusion cell ``gold → predicted``."""
    gold, sep, predicted = (value or "").partition("→")
    if not proj or not sep:
        return None
    rows, err = attempt(lambda: eval_svc.confusions(ctx, proj, gold.strip(), predicted.strip()))
    if err or rows is None:
        return pd.DataFrame({"problem": [err]})
    return pd.DataFrame(
        [
            {"id": r.id, "text": r.text, "gold": ", ".join(r.gold), "predicted": r.predicted}
            for r in rows
        ],
        columns=["id", "text", "gold", "predicted"],
    )


def build_evaluation_section(ctx: AppContext, project: gr.Dropdown) -> None:
    gr.Markdown("### Evaluation of the active model on the test split")
    evaluate_btn = gr.Button("Evaluate", elem_id="evaluate")
    status = gr.Markdown(elem_id="eval-status")
    with gr.Row():
        f1_plot = gr.Plot(label="Per-intent F1", elem_id="eval-f1")
        confusion_plot = gr.Plot(label="Confusion matrix (click a cell)", elem_id="eval-confusion")
    worst = gr.Dataframe(label="Most confused intent pairs", interactive=False, elem_id="worst")
    # Written by the heatmap's click handler; internal, so hidden.
    cell = gr.Textbox(
        label="Confusion cell (gold → predicted)",
        elem_id="eval-cell",
        max_lines=1,
        elem_classes=["hidden-trigger"],
    )
    cell_btn = gr.Button("Show", elem_id="eval-cell-btn", elem_classes=["hidden-trigger"])
    cell_rows = gr.Dataframe(label="Test utterances in that cell", interactive=False)
    evaluate_btn.click(
        bind(evaluate, ctx),
        [project],
        [status, f1_plot, confusion_plot, worst],
        api_visibility="private",
    ).then(None, None, None, js=_JS_BIND_CONFUSION, api_visibility="private")
    for trigger in (cell_btn.click, cell.submit):
        trigger(bind(show_cell, ctx), [project, cell], [cell_rows], api_visibility="private")
