"""The Team tab: an admin splits the unlabelled utterances between annotators (with a share
labelled twice), and everyone sees each annotator's progress, how far they agree (Cohen's κ per
pair, Krippendorff's α over all) and the intents they disagree on, with their disputed
utterances. Disagreements are settled in the Label tab's order *Disagreements to review*."""

from __future__ import annotations

import re
from typing import Any

import gradio as gr
import pandas as pd

from app.context import AppContext
from app.services import team as svc
from app.services.downloads import download_path
from app.ui.common import attempt, bind, ok, problem
from app.ui.guard import guarded

PROGRESS = ["annotator", "assigned", "answered", "left"]
INTENTS = ["intent", "agreement", "items", "disputed", "disputed utterances"]


def _value(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"


def agreement_text(view: dict[str, Any]) -> str:
    """The agreement in a few lines (Markdown)."""
    found = view["agreement"]
    if not found.items:
        return "No item has two answers yet: agreement shows once overlap items are answered."
    pairs = "\n".join(
        f"| {p.a} – {p.b} | {p.items} | {p.agreed} | {_value(p.kappa)} |" for p in found.pairs
    )
    waiting = view["waiting"]
    review = (
        f"**{waiting}** disagreement(s) wait for review: Label tab, order *Disagreements to "
        "review (team)*."
        if waiting
        else "No disagreement waits for review."
    )
    return (
        f"**{found.items}** items labelled twice or more, **{len(found.disputed)}** with "
        f"different answers · Krippendorff's α **{_value(found.alpha)}** (same answer) · "
        f"α with partial credit for overlapping intent sets {_value(found.alpha_masi)}\n\n"
        f"| annotators | items | same answer | Cohen's κ |\n|---|---|---|---|\n{pairs}\n\n{review}"
    )


def show(ctx: AppContext, proj: str | None) -> tuple[pd.DataFrame, str, pd.DataFrame, str]:
    if not proj:
        return pd.DataFrame(columns=PROGRESS), "", pd.DataFrame(columns=INTENTS), ""
    view, err = attempt(lambda: svc.overview(ctx, proj))
    if err or view is None:
        empty = pd.DataFrame(columns=PROGRESS)
        return empty, problem(err or ""), pd.DataFrame(columns=INTENTS), ""
    intents = pd.DataFrame(
        [
            [
                r["intent"],
                f"{r['statistic']} {r['agreement']:.2f}"
                if r["agreement"] is not None
                else "– (too few)",
                r["items"],
                r["disputed"],
                " · ".join(r["examples"]),
            ]
            for r in view["intents"]
        ],
        columns=INTENTS,
    )
    who = "" if view["progress"] else "Nobody is assigned utterances in this project yet."
    return pd.DataFrame(view["progress"], columns=PROGRESS), agreement_text(view), intents, who


def assign(
    ctx: AppContext, proj: str, names: list[str], overlap: float, search: str, limit: float | None
) -> str:
    if not proj:
        return problem("Pick a project first.")
    done, err = attempt(
        lambda: svc.assign(
            ctx,
            proj,
            names or [],
            overlap=(overlap or 0) / 100,
            search=search.strip() or None,
            limit=int(limit) if limit else None,
        )
    )
    if err or done is None:
        return problem(err or "")
    shared = done.pop("overlap")
    if not any(done.values()):
        return problem("No unlabelled utterance is left to assign (with that filter).")
    each = ", ".join(f"{n} {k}" for n, k in done.items())
    return ok(f"Assigned: {each}; {shared} labelled by two.")


def export(ctx: AppContext, proj: str) -> tuple[Any, str]:
    if not proj:
        return None, problem("Pick a project first.")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", proj).strip("-") or "project"
    path = download_path(ctx.settings, f"{safe}-answers.jsonl")
    done, err = attempt(lambda: svc.export_answers(ctx, proj, path))
    if err or done is None:
        return None, problem(err or "")
    return gr.update(value=str(done), visible=True), ok("Every answer, one JSON object per line.")


def build_team_tab(ctx: AppContext, project: gr.Dropdown) -> dict[str, Any]:
    with gr.Row(equal_height=True, elem_id="team-assign"):
        names = gr.Dropdown(
            [], multiselect=True, label="Annotators", scale=3, elem_id="team-annotators"
        )
        overlap = gr.Number(10, label="Labelled twice (%)", minimum=0, maximum=100, scale=1)
        search = gr.Textbox(label="Only utterances containing", scale=2)
        # 0, not blank, for "all": Gradio sends an empty number as 0 (a minimum of 1 refused it)
        limit = gr.Number(0, label="At most (0: all)", minimum=0, precision=0, scale=1)
        assign_btn = gr.Button("Assign", variant="primary", scale=0, min_width=110)
    status = gr.Markdown(elem_id="team-status")
    with gr.Row():
        with gr.Column(scale=2):
            progress = gr.Dataframe(
                headers=PROGRESS, interactive=False, elem_id="team-progress", max_height=260
            )
            nobody = gr.Markdown()
            with gr.Row():
                refresh_btn = gr.Button("Refresh", size="sm")
                export_btn = gr.Button("Every answer (JSONL)", size="sm")
            answers_file = gr.File(label="Answers", visible=False, height=60)
        with gr.Column(scale=3):
            summary = gr.Markdown(elem_id="team-agreement")
    gr.Markdown("**Intents the annotators disagree on**, lowest agreement first")
    intents = gr.Dataframe(
        headers=INTENTS,
        interactive=False,
        wrap=True,
        elem_id="team-intents",
        column_widths=["18%", "10%", "7%", "8%", "57%"],
        max_height=320,
    )
    shown = [progress, summary, intents, nobody]
    quiet: dict[str, Any] = {"api_visibility": "private", "show_progress": "hidden"}
    refresh_btn.click(bind(show, ctx), [project], shown, **quiet)
    assign_btn.click(
        guarded(ctx, "admin")(bind(assign, ctx)),
        [project, names, overlap, search, limit],
        [status],
        **quiet,
    ).then(bind(show, ctx), [project], shown, **quiet)
    export_btn.click(bind(export, ctx), [project], [answers_file, status], **quiet)

    def load(proj: str | None) -> tuple[Any, ...]:
        choices = attempt(lambda: svc.annotator_choices(ctx))[0] or []
        return (gr.update(choices=choices), *show(ctx, proj))

    return {"refresh": (load, [project], [names, *shown])}
