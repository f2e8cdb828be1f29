"""Train tab, Retrain section: the automatic retrain's switch and its threshold, where the designer
watches the retrains (issue 75 item 1: it was the fourth closed accordion of the Data tab, below
a 100-row table). The Label tab's model line links here (its "Retrain by itself after …"). A
change is saved at once, through the project's settings (:func:`app.services.projects.settings.change`,
as the Data tab's Project settings), and said in words; the line beside it says what counts and
when (:attr:`app.services.training.auto_retrain.AutoState.words`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from app.access import ProjectHandle
from app.access.actions import SAVE_SETTINGS
from app.services.projects import settings as svc
from app.serving.live import LivePools
from app.ui.common import attempt, bind, md_text, ok, problem
from app.ui.guard import guarded

SWITCH_ID = "train-auto-retrain"  # the Label tab's model line links to it (assets/queue_model.js)


def shown(live: LivePools, p: ProjectHandle | None) -> tuple[Any, Any, str]:
    """The switch, its threshold and what it does now (:attr:`AutoState.words`)."""
    if p is None:
        return gr.update(), gr.update(), ""
    view, err = attempt(lambda: svc.view(live, p))
    if err or view is None:
        return gr.update(), gr.update(), problem(err or "", notify=False)
    return (
        view.values.auto_retrain,
        view.values.auto_retrain_after,
        md_text(view.auto_brief),
    )


def save(
    live: LivePools, p: ProjectHandle | None, on: bool, after: float | None
) -> tuple[Any, Any, Any, str]:
    """Switch the automatic retrain on or off, or change its threshold, at once: (the status line,
    the switch, its threshold and the line after it). A threshold it does not take changes
    nothing and is said with its rule."""
    if p is None:
        return problem("Pick a project first."), gr.update(), gr.update(), ""
    changes = {"auto_retrain": "on" if on else "off"}
    if after is not None:
        changes["auto_retrain_after"] = f"{after:g}"
    done, err = attempt(lambda: svc.change(live, p, changes))
    if err or done is None:
        return problem(err or "Could not save the setting."), *shown(live, p)
    view, message = done
    values = view.values
    line = md_text(view.auto_brief)
    said = ok(message) if message != svc.NOTHING_CHANGED else gr.update()  # a box left as it was
    return said, values.auto_retrain, values.auto_retrain_after, line


@dataclass
class AutoSwitch:
    switch: gr.Checkbox
    after: gr.Number
    line: gr.Markdown
    status: gr.Markdown

    @property
    def outputs(self) -> list[Any]:
        return [self.switch, self.after, self.line]


def build_auto_switch(live: LivePools, project: gr.Dropdown) -> AutoSwitch:
    """Lay out the switch (one row) and bind it: a tick, or a threshold typed and applied (Enter
    or leaving the box), saves at once."""
    # one line at 1280x720: no label boxes (the box says what it counts: "new labels")
    with gr.Row(equal_height=True, elem_id="train-auto"):
        switch = gr.Checkbox(
            label="Retrain by itself after",
            value=True,
            scale=0,
            min_width=200,
            container=False,
            elem_id=SWITCH_ID,
        )
        after = gr.Number(
            label="new labels",
            show_label=False,
            placeholder="new labels",
            value=20,
            minimum=1,
            scale=0,
            min_width=90,  # no precision: 1.5 is refused by the setting's rule, never rounded
            container=False,
            elem_id="train-auto-after",
        )
        line = gr.Markdown(elem_id="train-auto-line")
    status = gr.Markdown(elem_id="train-auto-status")
    section = AutoSwitch(switch, after, line, status)
    quiet: dict[str, Any] = {"api_visibility": "private", "show_progress": "hidden"}
    saving = guarded(SAVE_SETTINGS, outputs=4)(bind(save, live))
    outputs = [status, *section.outputs]
    for event in (switch.input, after.submit, after.blur):
        event(saving, [project, switch, after], outputs, api_name="save_auto_retrain", **quiet)
    project.change(bind(shown, live), [project], section.outputs, **quiet)
    return section
