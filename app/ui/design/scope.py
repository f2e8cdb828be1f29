"""Design tab, out of scope: the project's trade-off (how much of each intent's own questions a
threshold keeps) and the thresholds calibrated from the labelled pool now. Callbacks only call
:mod:`app.services.projects`."""

from __future__ import annotations

import html
from typing import Any

import gradio as gr

from app.context import AppContext
from app.services import projects as project_svc
from app.ui.common import attempt, bind, ok, problem
from app.ui.guard import guarded
from core.evaluation.oos import DEFAULT_TARGET_RECALL as DEFAULT_TARGET

HELP = (
    "A question whose best intent scores below the threshold gets **no intent** "
    "(out of scope) in Try, the Label queue, the API and bundles, instead of a wrong guess. The "
    "threshold is calibrated on the labelled **training** examples only (never the test split, "
    "which reports accuracy): each is scored as a new question would be, with the intents' names "
    "and descriptions, by the examples outside its fold, and the threshold keeps the share you "
    "choose of those that land on their own intent (one threshold for every intent: with ~10 "
    "examples each, "
    "thresholds of their own were noisier on the benchmark). A higher share answers more "
    "questions and rejects fewer that are out of scope. Label real out-of-scope questions as `out_of_scope` (no "
    "minimum count, never trained as an intent) and the thresholds move to reject them."
)


def describe(ctx: AppContext, proj: str | None) -> tuple[str, Any, Any]:
    """The calibration in words, whether detection is on, and the trade-off."""
    if not proj:
        return "", gr.update(), gr.update()
    state, err = attempt(lambda: project_svc.out_of_scope(ctx, proj))
    if err or state is None:
        return problem(err or ""), gr.update(), gr.update()
    target = state["target_recall"]
    shown = [
        html.escape(state["message"]),
        f"{len(state['thresholds']) - ('default' in state['thresholds'])} intent thresholds"
        if state["thresholds"]
        else "",
    ]
    on = gr.update(value=target is not None)
    return " · ".join(s for s in shown if s), on, gr.update(value=target or DEFAULT_TARGET)


def apply(ctx: AppContext, proj: str | None, on: bool, target: float) -> str:
    """Turn detection on at ``target`` (the share each threshold keeps), or off."""
    if not proj:
        return problem("Pick a project first.")
    value = float(target) if on else None
    state, err = attempt(lambda: project_svc.set_out_of_scope(ctx, proj, value))
    if err or state is None:
        return problem(err or "")
    if state["target_recall"] is None:
        return ok("Out-of-scope detection is off: every question gets its best intent.")
    return ok(f"Each intent now keeps {state['target_recall']:.0%} of its own questions.")


def build_scope(ctx: AppContext, project: gr.Dropdown, user: gr.State) -> dict[str, Any]:
    gr.Markdown("### Out of scope")
    with gr.Accordion("How it decides", open=False):
        gr.Markdown(HELP, elem_classes=["help"])
    with gr.Row(equal_height=True):
        on = gr.Checkbox(label="detect out-of-scope questions", value=True, scale=1)
        target = gr.Slider(
            0.5,
            1,
            value=DEFAULT_TARGET,
            step=0.01,
            label="Share of each intent's own questions its threshold keeps",
            scale=3,
            elem_id="oos-target",
        )
        apply_btn = gr.Button("Apply", scale=0, min_width=120, elem_id="oos-apply")
    state = gr.Markdown(elem_id="oos-state")
    status = gr.Markdown(elem_id="oos-status")
    quiet: dict[str, Any] = {"api_visibility": "private"}
    refresh = (bind(describe, ctx), [project], [state, on, target])
    apply_btn.click(
        guarded(ctx, "designer")(bind(apply, ctx)),
        [project, on, target],
        [status],
        api_name="set_oos",
    ).then(*refresh, **quiet)
    return {"refresh": refresh}
