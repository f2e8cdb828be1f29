"""Train tab, Export & share section: the stakeholder report, a model bundle (optionally with an
int8 encoder), and opening someone else's bundle as a read-only project."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import gradio as gr

from app.access import ProjectHandle
from app.access.actions import BUNDLE
from app.services.projects import bundles as bundle_svc
from app.services.projects import reports as report_svc
from app.services.projects.downloads import download_path
from app.services.projects.projects import project_names
from app.serving.state import ServingState
from app.ui.common import GONE, attempt, bind, ok, problem
from app.ui.guard import guarded


def make_report(
    serving_state: ServingState, p: ProjectHandle | None, static: bool = False
) -> tuple[Any, str]:
    if p is None:
        return None, problem("Pick a project first.")
    path, err = attempt(lambda: report_svc.build_report(serving_state, p, static=static))
    if err or path is None:
        return None, problem(err or "")
    return gr.update(value=str(path), visible=True), ok(f"Report written: {path.name}")


def export(
    serving_state: ServingState, p: ProjectHandle | None, with_int8: bool
) -> tuple[Any, str]:
    if p is None:
        return None, problem("Pick a project first.")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", p.name).strip("-") or "project"
    out = download_path(serving_state.settings, f"{safe}.zip", p.id)
    info, err = attempt(
        lambda: bundle_svc.export_bundle(serving_state.live, p, out, int8=with_int8)
    )
    if err or info is None:
        return None, problem(err or "")
    return gr.update(value=str(out), visible=True), ok(
        f"Bundle written ({info['size_mb']} MB, {info['exemplars']} examples). Its predict.py "
        "runs it without Intent Studio: see its README.md."
    )


def open_bundle(serving_state: ServingState, file: Any) -> tuple[Any, str]:
    if file is None:
        return gr.update(), problem("Choose a bundle .zip first.")
    path = getattr(file, "name", file)
    if not Path(path).exists():
        return gr.update(), problem(GONE)
    try:
        name, err = attempt(lambda: bundle_svc.import_bundle(serving_state.factories, path))
    finally:
        serving_state.uploads.used_up(path)  # opened (or refused): its upload goes
    if err or name is None:
        return gr.update(), problem(err or "")
    return gr.update(choices=project_names(serving_state.db), value=name), ok(
        f"Opened as read-only project {name!r}."
    )


def build_export_section(serving_state: ServingState, project: gr.Dropdown) -> None:
    with gr.Row(equal_height=True):
        static = gr.Checkbox(
            label="static report: tables instead of interactive charts (smaller, prints well)",
            scale=2,
            elem_id="report-static",
        )
        report = gr.Button("Stakeholder report (HTML)", elem_id="report", scale=1)
        report_file = gr.File(label="Report", scale=2, visible=False, elem_id="report-file")
    with gr.Row(equal_height=True):
        int8 = gr.Checkbox(
            label="int8 encoder instead of fp32 (4x smaller; refused if it changes >1% of test "
            "predictions; a trained version's then cannot be opened as a project)",
            scale=2,
        )
        bundle_btn = gr.Button("Export model bundle (.zip)", elem_id="bundle-export", scale=1)
        bundle_file = gr.File(label="Bundle", scale=2, visible=False, elem_id="bundle-file")
    with gr.Row(equal_height=True):
        bundle_in = gr.File(
            label="Open someone's model bundle as a read-only project",
            file_types=[".zip"],
            height=80,
            scale=3,
        )
        open_btn = gr.Button("Open bundle", elem_id="bundle-open", scale=1)
    status = gr.Markdown(elem_id="export-status")
    report.click(
        bind(make_report, serving_state),
        [project, static],
        [report_file, status],
        api_name="report",
    )
    bundle_btn.click(
        guarded(BUNDLE, outputs=2, message=1)(bind(export, serving_state)),
        [project, int8],
        [bundle_file, status],
        api_name="export_bundle",
    )
    open_btn.click(
        guarded(BUNDLE, outputs=2, message=1)(bind(open_bundle, serving_state)),
        [bundle_in],
        [project, status],
        api_visibility="private",
    )
