"""The Train tab: one Retrain button that queues a background job, a live progress bar with
Cancel, the model versions with activate / roll back and compare, the evaluation of the active
model (per-intent F1, confusion matrix with click-through) and the stakeholder report.

Callbacks only call :mod:`app.services.training`, :mod:`~app.services.versions`,
:mod:`~app.services.evaluation` and :mod:`~app.services.reports`.
"""

from __future__ import annotations

import html
import re
import tempfile
from pathlib import Path
from typing import Any

import gradio as gr
import pandas as pd

from app import plots
from app.auth import guarded
from app.context import AppContext
from app.services import bundles as bundle_svc
from app.services import evaluation as eval_svc
from app.services import reports as report_svc
from app.services import training as train_svc
from app.services import versions as version_svc
from app.ui.common import attempt, ok, problem

HELP = (
    "**Retrain** tunes the encoder on your labelled `train` utterances in the background (you can "
    "keep labelling) and evaluates it on the `test` split. A new version becomes active only if it "
    "is at least as good as the current one (within 1 point); otherwise it is kept for you to "
    "compare and activate by hand. Predictions are always the nearest labelled examples, so new "
    "labels count at once, with or without a retrain."
)
BASE_CHOICE = "frozen base encoder"
HISTORY_COLUMNS = [
    "version",
    "active",
    "method",
    "accuracy",
    "macro_f1",
    "frozen_accuracy",
    "silhouette",
    "split",
    "train_s",
    "size_kb",
    "dataset",
    "created",
    "note",
]

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


def progress_html(job: train_svc.JobView | None) -> str:
    """The job's progress bar and status line (user text escaped)."""
    if job is None:
        return "<div class='job-status'>No training yet.</div>"
    pct = round(100 * job.fraction) if job.status != "succeeded" else 100
    eta = f" · about {job.eta_seconds:.0f}s left" if job.active and job.eta_seconds else ""
    loss = f" · loss {job.loss:.3f}" if job.loss is not None and job.active else ""
    return (
        f"<div class='job-status job-{html.escape(job.status)}' id='job-{job.id}'>"
        f"<div class='bar'><div class='fill' style='width:{pct}%'></div></div>"
        f"<b>Job #{job.id}: {html.escape(job.status)}</b> · {pct}%{loss}{eta}<br>"
        f"{html.escape(job.message)}</div>"
    )


def _version_choices(rows: list[dict[str, Any]]) -> list[str]:
    return [BASE_CHOICE] + [f"v{r['version']}" for r in rows]


def _parse_version(choice: str | None) -> int | None:
    m = re.fullmatch(r"v(\d+)", choice or "")
    return int(m.group(1)) if m else None


def build_train_tab(ctx: AppContext, project: gr.Dropdown, user: gr.State) -> dict[str, Any]:
    """Lay out the Train tab and bind its events. Returns its refresh hook."""
    gr.Markdown(HELP)
    with gr.Row(equal_height=True):
        method = gr.Dropdown(
            list(train_svc.METHOD_CHOICES),
            value=next(iter(train_svc.METHOD_CHOICES)),
            label="Method",
            scale=3,
        )
        settings = gr.Textbox(
            label="Advanced settings (optional)",
            placeholder="e.g. epochs=2, lr=5e-5, seed=1",
            scale=3,
            max_lines=1,
        )
        retrain = gr.Button("Retrain", variant="primary", scale=1, elem_id="retrain")
        cancel = gr.Button("Cancel", scale=1, elem_id="cancel-training")
    progress = gr.HTML(progress_html(None), elem_id="job-progress")
    message = gr.Markdown(elem_id="train-message")
    with gr.Accordion("Training log", open=False):
        log = gr.Textbox(lines=8, max_lines=20, show_label=False, elem_id="job-log")
    timer = gr.Timer(1.0, active=False)
    job_id = gr.State(None)

    gr.Markdown("### Model versions")
    history = gr.Dataframe(
        headers=HISTORY_COLUMNS, interactive=False, wrap=True, elem_id="versions"
    )
    with gr.Row(equal_height=True):
        pick = gr.Dropdown([BASE_CHOICE], value=BASE_CHOICE, label="Version", scale=2)
        activate = gr.Button("Make active (roll back / forward)", scale=1, elem_id="activate")
        cmp_a = gr.Dropdown([], label="Compare", scale=1)
        cmp_b = gr.Dropdown([], label="with", scale=1)
        compare = gr.Button("Compare", scale=1)
    compare_table = gr.Dataframe(interactive=False, visible=False, elem_id="compare")

    gr.Markdown("### Evaluation of the active model on the test split")
    with gr.Row():
        evaluate = gr.Button("Evaluate", elem_id="evaluate", scale=1)
        report = gr.Button("Stakeholder report (HTML)", elem_id="report", scale=1)
        report_file = gr.File(label="Report", scale=2, visible=False, elem_id="report-file")
    with gr.Row(equal_height=True):
        int8 = gr.Checkbox(
            label="add an int8 ONNX encoder (4x smaller; refused if it changes >1% of test "
            "predictions)",
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
    eval_status = gr.Markdown(elem_id="eval-status")
    with gr.Row():
        f1_plot = gr.Plot(label="Per-intent F1", elem_id="eval-f1")
        confusion_plot = gr.Plot(label="Confusion matrix (click a cell)", elem_id="eval-confusion")
    worst = gr.Dataframe(label="Most confused intent pairs", interactive=False, elem_id="worst")
    cell = gr.Textbox(label="Confusion cell (gold → predicted)", elem_id="eval-cell", max_lines=1)
    cell_btn = gr.Button("Show", elem_id="eval-cell-btn", elem_classes=["hidden-trigger"])
    cell_rows = gr.Dataframe(label="Test utterances in that cell", interactive=False)

    def poll(proj: str | None, jid: int | None) -> tuple[Any, ...]:
        """Refresh the job panel; keep the timer running only while a job is active."""
        job = None
        if proj:
            job, _ = attempt(lambda: train_svc.latest_job(ctx, proj))
        view = job if job is not None and (jid is None or job.id >= jid) else None
        active = view is not None and view.active
        return (
            progress_html(view),
            view.log if view is not None else "",
            gr.update(active=active),
            view.id if view is not None else None,
        )

    def start(proj: str | None, meth: str, extra: str, who: str) -> tuple[Any, ...]:
        if not proj:
            return problem("Pick a project first."), None, gr.update(active=False)

        def go() -> tuple[train_svc.JobView, bool]:
            items = [x for x in re.split(r"[,\n]", extra or "") if x.strip()]
            config = {**train_svc.METHOD_CHOICES[meth], **train_svc.parse_settings(items)}
            return train_svc.request_retrain(ctx, proj, config)

        res, err = attempt(go)
        if err or res is None:
            return problem(err or "could not start"), None, gr.update(active=False)
        job, created = res
        msg = (
            ok(f"Job #{job.id} queued: training runs in the background.")
            if created
            else ok(f"Job #{job.id} is already {job.status}; showing it.")
        )
        return msg, job.id, gr.update(active=True)

    def stop(jid: int | None, proj: str | None) -> str:
        if jid is None and proj:
            latest, _ = attempt(lambda: train_svc.latest_job(ctx, proj))
            jid = latest.id if latest is not None and latest.active else None
        if jid is None:
            return problem("No training job is running.")
        job, err = attempt(lambda: train_svc.cancel(ctx, jid))
        if err or job is None:
            return problem(err or "")
        return ok(f"Job #{job.id}: {job.message}")

    def load_history(proj: str | None) -> tuple[Any, ...]:
        rows: list[dict[str, Any]] = []
        if proj:
            rows = attempt(lambda: version_svc.history(ctx, proj))[0] or []
        frame = pd.DataFrame(rows, columns=HISTORY_COLUMNS)
        choices = _version_choices(rows)
        active = next((f"v{r['version']}" for r in rows if r["active"]), BASE_CHOICE)
        return (
            frame,
            gr.update(choices=choices, value=active),
            gr.update(choices=choices, value=choices[-1] if len(choices) > 1 else BASE_CHOICE),
            gr.update(choices=choices, value=active),
        )

    def make_active(proj: str | None, choice: str) -> str:
        if not proj:
            return problem("Pick a project first.")
        msg, err = attempt(lambda: version_svc.activate(ctx, proj, _parse_version(choice)))
        return problem(err) if err else ok(msg or "")

    def do_compare(proj: str | None, a: str, b: str) -> tuple[Any, str]:
        va, vb = _parse_version(a), _parse_version(b)
        if not proj or va is None or vb is None:
            return gr.update(visible=False), problem("Pick two trained versions to compare.")
        res, err = attempt(lambda: version_svc.compare(ctx, proj, va, vb))
        if err or res is None:
            return gr.update(visible=False), problem(err or "")
        frame = pd.DataFrame(res["per_intent"]).rename(
            columns={"f1_a": f"F1 {a}", "f1_b": f"F1 {b}", "delta": "change"}
        )
        acc_a, acc_b = res["a"]["accuracy"], res["b"]["accuracy"]
        head = f"Accuracy {a}: {acc_a:.3f} → {b}: {acc_b:.3f}" if acc_a and acc_b else ""
        return gr.update(value=frame, visible=True), head

    def do_evaluate(proj: str | None) -> tuple[Any, ...]:
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
        return (
            head,
            plots.f1_bars(per_intent),
            plots.confusion_heatmap(labels, matrix),
            pairs,
        )

    def show_cell(proj: str | None, value: str) -> Any:
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

    def make_report(proj: str | None) -> tuple[Any, str]:
        if not proj:
            return None, problem("Pick a project first.")
        path, err = attempt(lambda: report_svc.build_report(ctx, proj))
        if err or path is None:
            return None, problem(err or "")
        return gr.update(value=str(path), visible=True), ok(f"Report written: {path.name}")

    def export(proj: str | None, with_int8: bool) -> tuple[Any, str]:
        if not proj:
            return None, problem("Pick a project first.")
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", proj).strip("-") or "project"
        out = Path(tempfile.mkdtemp(prefix="intent-studio-bundle-")) / f"{safe}.zip"
        info, err = attempt(lambda: bundle_svc.export_bundle(ctx, proj, out, int8=with_int8))
        if err or info is None:
            return None, problem(err or "")
        return gr.update(value=str(out), visible=True), ok(
            f"Bundle written ({info['size_mb']} MB, {info['exemplars']} examples)."
        )

    def open_bundle(file: Any) -> tuple[Any, str]:
        if file is None:
            return gr.update(), problem("Choose a bundle .zip first.")
        path = getattr(file, "name", file)
        name, err = attempt(lambda: bundle_svc.import_bundle(ctx, path))
        if err or name is None:
            return gr.update(), problem(err or "")
        from app.services.projects import project_names

        return gr.update(choices=project_names(ctx), value=name), ok(
            f"Opened as read-only project {name!r}."
        )

    bundle_btn.click(
        guarded(ctx, "designer", outputs=2)(export),
        [project, int8],
        [bundle_file, eval_status],
        api_name="export_bundle",
    )
    open_btn.click(
        guarded(ctx, "designer", outputs=2)(open_bundle),
        [bundle_in],
        [project, eval_status],
        api_visibility="private",
    )

    history_out = [history, pick, cmp_b, cmp_a]
    retrain.click(
        guarded(ctx, "designer", outputs=3)(start),
        [project, method, settings, user],
        [message, job_id, timer],
        api_name="retrain",
    ).then(poll, [project, job_id], [progress, log, timer, job_id], api_visibility="private")
    cancel.click(
        guarded(ctx, "designer")(stop), [job_id, project], [message], api_name="cancel_training"
    )

    def tick(proj: str | None, jid: int | None) -> tuple[Any, ...]:
        out = poll(proj, jid)
        if out[2]["active"]:
            return (*out, gr.update(), gr.update(), gr.update(), gr.update())
        return (*out, *load_history(proj))  # the job ended: show its version

    timer.tick(
        tick,
        [project, job_id],
        [progress, log, timer, job_id, *history_out],
        api_visibility="private",
        show_progress="hidden",
    )
    activate.click(
        guarded(ctx, "designer")(make_active),
        [project, pick],
        [message],
        api_name="activate_version",
    ).then(load_history, [project], history_out, api_visibility="private")
    compare.click(
        do_compare, [project, cmp_a, cmp_b], [compare_table, message], api_visibility="private"
    )
    evaluate.click(
        do_evaluate,
        [project],
        [eval_status, f1_plot, confusion_plot, worst],
        api_visibility="private",
    ).then(None, None, None, js=_JS_BIND_CONFUSION, api_visibility="private")
    cell_btn.click(show_cell, [project, cell], [cell_rows], api_visibility="private")
    cell.submit(show_cell, [project, cell], [cell_rows], api_visibility="private")
    report.click(make_report, [project], [report_file, eval_status], api_name="report")

    def refresh(proj: str | None) -> tuple[Any, ...]:
        return (*poll(proj, None), *load_history(proj))

    return {"refresh": (refresh, [project], [progress, log, timer, job_id, *history_out])}
