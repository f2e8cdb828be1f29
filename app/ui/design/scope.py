"""Design tab, out of scope: how the decision works, and the thresholds calibrated from the
labelled pool now for the project's trade-off (set with the other settings in the Data tab's
*Project settings*). Callbacks only call :mod:`app.services.projects.projects`."""

from __future__ import annotations

from typing import Any

import gradio as gr

from app.access import ProjectHandle
from app.services.projects import projects as project_svc
from app.serving.live import LivePools
from app.ui.common import attempt, bind, md_text, problem

HELP = (
    "A question whose best intent scores below the threshold gets **no intent** "
    "(out of scope) in Try, the Label queue, the API and bundles, instead of a wrong guess. The "
    "threshold is calibrated on the labelled **training** examples only (never the test split, "
    "which reports accuracy): each is scored as a new question would be, with the intents' names "
    "and descriptions, by the examples outside its fold, and the threshold keeps the share you "
    "choose of them, their best intent right or wrong (one threshold for every intent: with ~10 "
    "examples each, "
    "thresholds of their own were noisier on the benchmark). A higher share answers more "
    "questions and rejects fewer that are out of scope. Label real out-of-scope questions as `out_of_scope` (no "
    "minimum count, never trained as an intent) and the thresholds move to reject them. After a "
    "retrain the encoder scores its own training examples higher than new questions: a "
    "*held-out* calibration (Project settings → Out-of-scope calibration; the default on a GPU) "
    "measures by "
    "how much, with encoders trained without a fifth of them, and corrects their scores."
)


def describe(live: LivePools, p: ProjectHandle | None) -> str:
    """The calibration in words: the trade-off and how many intent thresholds it made."""
    if p is None:
        return ""
    state, err = attempt(lambda: project_svc.out_of_scope(live, p))
    if err or state is None:
        return problem(err or "")
    target = state["target_recall"]
    own = len(state["thresholds"]) - ("default" in state["thresholds"])
    shown = [
        f"Each intent keeps **{target:.0%}** of its own questions." if target is not None else "",
        md_text(state["message"]),
        f"{own} intent(s) with a threshold of their own" if own else "",
    ]
    return " · ".join(s for s in shown if s)


def build_scope(live: LivePools, project: gr.Dropdown, user: gr.State) -> dict[str, Any]:
    gr.Markdown("### Out of scope")
    gr.Markdown(HELP, elem_classes=["help"])
    state = gr.Markdown(elem_id="oos-state")
    gr.Markdown(
        "Turn detection on or off, set the share each threshold keeps and how a retrain "
        "calibrates it in the **Data** tab, *Project settings* (or `intent-studio settings --set "
        "oos_target_recall=0.9`, `--set oos_calibration=held-out`).",
        elem_classes=["help"],
    )
    return {"refresh": (bind(describe, live), [project], [state])}
