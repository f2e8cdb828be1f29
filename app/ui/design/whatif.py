"""Design tab, merge / split what-ifs: pick two intents to see the estimated accuracy and the
confusions left after merging them, or one intent to see proposed parts for a split with the same
estimate. Nothing changes: the Data tab merges. Callbacks only call :mod:`app.services.design.whatif`."""

from __future__ import annotations

from typing import Any

import gradio as gr

from app.access import ProjectHandle
from app.services.design import whatif as svc
from app.serving.factories import FactoryBuilder
from app.ui.common import attempt, bind, md_text, problem
from core.design.whatif import WhatIf

CONFUSION_HEADERS = ["gold", "predicted", "examples"]
PARTS = ["auto", "2", "3", "4"]
HELP = (
    "An estimate, not a retrain (the nearest-example rule on the active model's embeddings). A "
    "**merge** is scored on the test split when there is one, by the same predictions as the "
    "Train tab's Evaluation, so the confusions it removes are the confusion matrix's cells; "
    "else, like a **split**, 5-fold over the training examples. Nothing changes here: merge in "
    "the Data tab."
)


def _headline(w: WhatIf) -> str:
    return f"{md_text(w.summary())}\n\nmacro-F1 {w.macro_f1_before:.3f} → {w.macro_f1_after:.3f}"


def _confusions(w: WhatIf) -> Any:
    rows = [[g, p, n] for g, p, n in w.confusions_after[:20]]
    return gr.update(value=rows, visible=bool(rows))


def merge_whatif(
    factories: FactoryBuilder, p: ProjectHandle | None, a: str | None, b: str | None
) -> tuple[Any, Any]:
    """The merge estimate: (summary, confusions left around the merged intent)."""
    if p is None:
        return "Pick a project.", gr.update(visible=False)
    est, err = attempt(lambda: svc.merge(factories, p, a, b))
    if err or est is None:
        return problem(err or ""), gr.update(visible=False)
    w = est.whatif
    lines = [_headline(w)]
    if w.confusions_after:
        lines.append("Confusions the merged intent would still have, biggest first:")
    else:
        lines.append("The merged intent would have no confusions left.")
    return "\n\n".join(lines), _confusions(w)


def split_whatif(
    factories: FactoryBuilder, p: ProjectHandle | None, intent: str | None, parts: str
) -> tuple[Any, Any]:
    """The split proposal: (parts with words and examples, confusions between the parts)."""
    if p is None:
        return "Pick a project.", gr.update(visible=False)
    count = int(parts) if parts and parts.isdigit() else None
    est, err = attempt(lambda: svc.split(factories, p, intent, count))
    if err or est is None:
        return problem(err or ""), gr.update(visible=False)
    w = est.whatif
    lines = [_headline(w), "Proposed parts:"]
    for part in w.parts:
        words = md_text(", ".join(part.keywords[:4])) or "no distinctive words"
        shown = " · ".join(f"“{md_text(t)}”" for t in est.examples.get(part.name, []))
        lines.append(f"- **{md_text(part.name)}** ({part.size}): {words} — {shown}")
    return "\n".join(lines[:2]) + "\n\n" + "\n".join(lines[2:]), _confusions(w)


def build_whatif(factories: FactoryBuilder, project: gr.Dropdown, user: gr.State) -> dict[str, Any]:
    """Lay out the merge / split section and bind its events. Returns its intent pickers."""
    gr.Markdown("### Merge or split: what if?")
    gr.Markdown(HELP)
    with gr.Row():
        a = gr.Dropdown(label="Merge intent", choices=[], scale=2, elem_id="whatif-a")
        b = gr.Dropdown(label="with intent", choices=[], scale=2, elem_id="whatif-b")
        merge_btn = gr.Button("Estimate the merge", scale=1, size="md", elem_id="whatif-merge")
        split_of = gr.Dropdown(label="Split intent", choices=[], scale=2, elem_id="whatif-split-of")
        parts = gr.Dropdown(PARTS, value="auto", label="parts", scale=1, min_width=90)
        split_btn = gr.Button("Propose a split", scale=1, size="md", elem_id="whatif-split")
    result = gr.Markdown(elem_id="whatif-result")
    confusions = gr.Dataframe(
        headers=CONFUSION_HEADERS,
        label="Confusions after (test split, or out of fold without one)",
        interactive=False,
        visible=False,
        max_height=240,
        elem_id="whatif-confusions",
    )
    merge_btn.click(
        bind(merge_whatif, factories),
        [project, a, b],
        [result, confusions],
        api_name="merge_whatif",
    )
    split_btn.click(
        bind(split_whatif, factories),
        [project, split_of, parts],
        [result, confusions],
        api_name="split_whatif",
    )
    return {"pickers": [a, b, split_of]}
