"""The Data tab's *Project settings* accordion: every setting of the project
(:class:`app.project_settings.ProjectSettings`) in one place, shown for the chosen project with
what each does now, and saved together by one button (one bad value changes nothing). The
callbacks are plain functions over :mod:`app.services.projects.settings`, as the CLI's ``settings`` is."""

from __future__ import annotations

import html
from typing import Any

import gradio as gr

from app.access import ProjectHandle
from app.access.actions import SAVE_SETTINGS
from app.services.projects import settings as svc
from app.serving.live import LivePools
from app.ui.common import attempt, bind, ok, problem
from app.ui.guard import guarded
from core.evaluation.oos import DEFAULT_TARGET_RECALL

# The effects list's short headings (the form's labels say the rest).
HEADINGS = {
    "oos_target_recall": "Out of scope",
    "anchor_weight": "Anchors",
    "encode_context": "Context",
    "serve_int8": "Serving",
    "oos_calibration": "Calibration",
    "auto_retrain": "Automatic retrain",
    "auto_retrain_after": "Labels that start one",
    "keep_versions": "Versions' files",
    "base_encoder": "Base encoder",
}
# The calibration's choices (label, stored value): its line in the effects says what each does.
CALIBRATION_CHOICES = [("auto", "auto"), ("held-out", "held-out"), ("quick", "quick")]
# The values shown for no project (and the form's starting state).
BLANK: tuple[Any, ...] = (
    True,
    DEFAULT_TARGET_RECALL,
    "auto",
    1.0,
    False,
    True,
    True,
    20,
    gr.update(),
    3,
    "",
)


def effects_html(view: svc.SettingsView) -> str:
    """What each setting does in the project now, one line each (user text escaped)."""
    items = "".join(
        f"<li><b>{HEADINGS[name]}:</b> {html.escape(view.effects[name])}</li>"
        for name in view.effects
    )
    return f"<ul class='settings-effects'>{items}</ul>"


def shown(live: LivePools, p: ProjectHandle | None) -> tuple[Any, ...]:
    """The form for ``proj``: out-of-scope on, its target and calibration, anchor weight,
    context encoding, int8 serving, the automatic retrain and its count of labels, its base
    encoder (among those installed here), the newest versions that keep their files, and the
    effects list."""
    if p is None:
        return BLANK
    view, err = attempt(lambda: svc.view(live, p))
    if err or view is None:
        return (*BLANK[:-1], problem(err or "Could not read the settings."))
    v = view.values
    target = v.oos_target_recall
    return (
        target is not None,
        target if target is not None else DEFAULT_TARGET_RECALL,
        v.oos_calibration,
        v.anchor_weight,
        v.encode_context,
        v.serve_int8,
        v.auto_retrain,
        v.auto_retrain_after,
        gr.update(choices=list(view.encoder_choices), value=view.base_encoder),
        v.keep_versions,
        effects_html(view),
    )


def save(
    live: LivePools,
    p: ProjectHandle | None,
    oos_on: bool,
    target: float,
    calibration: str | None,
    weight: float | None,
    encode_context: bool,
    serve_int8: bool,
    auto_retrain: bool = True,
    auto_after: float | None = None,
    base_encoder: str | None = None,
    keep_versions: float | None = None,
) -> tuple[str, Any]:
    """Save the form (every value is checked first: one bad value changes nothing). Returns the
    status line (what changed) and the effects list after it."""
    if p is None:
        return problem("Pick a project first."), ""
    changes = {
        "oos_target_recall": f"{float(target)}" if oos_on else "off",
        "oos_calibration": calibration or "auto",
        "anchor_weight": "0" if weight is None else f"{float(weight)}",
        "encode_context": "on" if encode_context else "off",
        "serve_int8": "on" if serve_int8 else "off",
        "auto_retrain": "on" if auto_retrain else "off",
    }
    if auto_after is not None:
        changes["auto_retrain_after"] = f"{auto_after:g}"
    if base_encoder:
        changes["base_encoder"] = base_encoder
    if keep_versions is not None:
        changes["keep_versions"] = f"{keep_versions:g}"
    res, err = attempt(lambda: svc.change(live, p, changes))
    if err or res is None:
        return problem(err or "Could not save the settings."), gr.update()
    view, message = res
    return ok(message), effects_html(view)


def build_settings(live: LivePools, project: gr.Dropdown) -> Any:
    """Lay out the accordion; returns ``bind(after_change)``, which wires its events once the
    Data tab knows how to refresh (a saved setting changes the table's predictions)."""
    with gr.Accordion("Project settings", open=False, elem_id="project-settings") as acc:
        with gr.Row(equal_height=True):
            oos_on = gr.Checkbox(
                label="Detect out-of-scope questions", value=True, scale=1, elem_id="set-oos-on"
            )
            target = gr.Slider(
                0.5,
                1,
                value=DEFAULT_TARGET_RECALL,
                step=0.01,
                label=svc.TITLES["oos_target_recall"],
                scale=3,
                elem_id="set-oos-target",
            )
            calibration = gr.Radio(
                CALIBRATION_CHOICES,
                value="auto",
                label=svc.TITLES["oos_calibration"],
                scale=3,
                elem_id="set-oos-calibration",
            )
        with gr.Row(equal_height=True):
            weight = gr.Number(
                label=svc.TITLES["anchor_weight"],
                value=1.0,
                minimum=0,
                scale=2,
                elem_id="set-anchor-weight",
            )
            encode_context = gr.Checkbox(
                label=svc.TITLES["encode_context"] + " (its context column)",
                value=False,
                scale=2,
                elem_id="set-encode-context",
            )
            serve_int8 = gr.Checkbox(
                label=svc.TITLES["serve_int8"], value=True, scale=2, elem_id="set-serve-int8"
            )
            base_encoder = gr.Dropdown(
                label=svc.TITLES["base_encoder"],
                choices=[],
                value=None,
                scale=2,
                elem_id="set-base-encoder",
            )
        with gr.Row(equal_height=True):
            auto_retrain = gr.Checkbox(
                label=svc.TITLES["auto_retrain"], value=True, scale=2, elem_id="set-auto-retrain"
            )
            auto_after = gr.Number(
                label=svc.TITLES["auto_retrain_after"],
                value=20,
                minimum=1,
                scale=2,  # no precision: 1.5 is refused by the setting's rule, never rounded to 2
                elem_id="set-auto-retrain-after",
            )
            keep_versions = gr.Number(
                label=svc.TITLES["keep_versions"],
                value=3,
                minimum=1,
                scale=2,  # no precision, as above
                elem_id="set-keep-versions",
            )
        with gr.Row(equal_height=True):
            save_btn = gr.Button("Save settings", variant="primary", scale=0, min_width=160)
            status = gr.Markdown(elem_id="settings-status")
        effects = gr.HTML(elem_id="settings-effects")
    form = [
        oos_on,
        target,
        calibration,
        weight,
        encode_context,
        serve_int8,
        auto_retrain,
        auto_after,
        base_encoder,
        keep_versions,
    ]

    def bind_events(after_change: Any) -> None:
        quiet: dict[str, Any] = {"api_visibility": "private", "show_progress": "hidden"}
        # Shown on opening the accordion too: Gradio sends no project change to an event whose
        # only outputs sit in a closed accordion (Save would then have written the defaults).
        for event in (project.change, acc.expand):
            event(bind(shown, live), [project], [*form, effects], **quiet)
        after_change(
            save_btn.click(
                guarded(SAVE_SETTINGS, outputs=2)(bind(save, live)),
                [project, *form],
                [status, effects],
                api_name="save_settings",
            )
        )

    return bind_events
