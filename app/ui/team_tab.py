"""The Team tab: an admin splits the unlabelled utterances between annotators (with a share
labelled twice), and everyone sees each annotator's progress, how far they agree (Cohen's κ per
pair, Krippendorff's α over all) and the intents they disagree on, with their disputed
utterances. Disagreements are settled in the Label tab's order *Disagreements to review*. Its
*Members* section lists who sees the project; an admin adds a user with a role there, or
removes one (:mod:`app.services.projects.members`)."""

from __future__ import annotations

import re
from typing import Any

import gradio as gr
import pandas as pd

from app.access import ProjectHandle
from app.access.actions import ASSIGN, EXPORT, MANAGE_MEMBERS
from app.plots.team import agreement_chart
from app.services.labelling import team as svc
from app.services.labelling import team_answers as answers_svc
from app.services.projects import accounts
from app.services.projects import members as members_svc
from app.services.projects.downloads import download_path
from app.serving.state import ServingState
from app.ui.common import attempt, bind, breakable, ok, problem
from app.ui.guard import guarded
from storage.db import Database
from storage.ids import whole_number

PROGRESS = ["annotator", "assigned", "answered", "left"]
MEMBERS = ["user", "role here", "own role", "status"]
OWN_ROLE = "their own role"
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


def chart(view: dict[str, Any]) -> Any:
    """The agreement drawn: κ per pair and per intent (none before an item has two answers)."""
    found = view["agreement"]
    if not found.items:
        return gr.update(value=None, visible=False)
    pairs = [(f"{p.a} – {p.b}", "κ", p.kappa, p.items, p.agreed) for p in found.pairs]
    intents = [
        (
            r.intent,
            "κ" if r.statistic == "kappa" else "α",
            r.value,
            r.items,
            r.items - len(r.disputed),
        )
        for r in found.intents
    ]
    return gr.update(value=agreement_chart(pairs, intents), visible=True)


def show(db: Database, p: ProjectHandle | None) -> tuple[Any, ...]:
    """The progress table, the agreement (its text and its chart), the disputed intents, and a
    line when nobody is assigned."""
    hidden = gr.update(value=None, visible=False)
    if p is None:
        return pd.DataFrame(columns=PROGRESS), "", hidden, pd.DataFrame(columns=INTENTS), ""
    view, err = attempt(lambda: answers_svc.overview(db, p))
    if err or view is None:
        empty = pd.DataFrame(columns=PROGRESS)
        return empty, problem(err or ""), hidden, pd.DataFrame(columns=INTENTS), ""
    intents = pd.DataFrame(
        [
            [
                breakable(r["intent"]),  # breaks only after an underscore
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
    progress = pd.DataFrame(view["progress"], columns=PROGRESS)
    return progress, agreement_text(view), chart(view), intents, who


def assign(
    db: Database,
    p: ProjectHandle | None,
    names: list[str],
    overlap: float,
    search: str,
    limit: float | None,
) -> str:
    if p is None:
        return problem("Pick a project first.")
    done, err = attempt(
        lambda: svc.assign(
            db,
            p,
            names or [],
            overlap=(overlap or 0) / 100,
            search=(search or "").strip() or None,
            limit=whole_number(limit, "limit") if limit else None,
        )
    )
    if err or done is None:
        return problem(err or "")
    shared = done.pop("overlap")
    if not any(done.values()):
        return problem("No unlabelled utterance is left to assign (with that filter).")
    each = ", ".join(f"{n} {k}" for n, k in done.items())
    return ok(f"Assigned: {each}; {shared} labelled by two.")


def export(serving_state: ServingState, p: ProjectHandle | None) -> tuple[Any, str]:
    if p is None:
        return None, problem("Pick a project first.")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", p.name).strip("-") or "project"
    path = download_path(serving_state.settings, f"{safe}-answers.jsonl", p.id)
    done, err = attempt(lambda: answers_svc.export_answers(serving_state.db, p, path))
    if err or done is None:
        return None, problem(err or "")
    return gr.update(value=str(done), visible=True), ok("Every answer, one JSON object per line.")


def member_rows(db: Database, p: ProjectHandle | None) -> tuple[pd.DataFrame, Any, Any]:
    """The members table, the users an admin may add (everyone but admins, who see every
    project already) and the members' status line: why they are missing when they could not be
    read (else left as it is)."""
    if p is None:
        return pd.DataFrame(columns=MEMBERS), gr.update(choices=[]), gr.skip()
    rows, err = attempt(lambda: members_svc.members(db, p))
    table = pd.DataFrame(
        [[m.name, m.role, m.user_role, m.status] for m in rows or []], columns=MEMBERS
    )
    users, users_err = attempt(lambda: accounts.user_names(db, roles=("viewer", "designer")))
    err = err or users_err
    return table, gr.update(choices=users or []), problem(err, notify=False) if err else gr.skip()


def add_member(db: Database, p: ProjectHandle, name: str | None, role: str) -> str:
    if not name:
        return problem("Pick the user to add.")
    done, err = attempt(
        lambda: members_svc.add_member(db, p, name, None if role == OWN_ROLE else role)
    )
    return problem(err or "") if err or done is None else ok(done)


def remove_member(db: Database, p: ProjectHandle, name: str | None) -> str:
    if not name:
        return problem("Pick the user to remove.")
    done, err = attempt(lambda: members_svc.remove_member(db, p, name))
    return problem(err or "") if err or done is None else ok(done)


def build_team_tab(serving_state: ServingState, project: gr.Dropdown) -> dict[str, Any]:
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
    drawn = gr.Plot(elem_id="team-agreement-chart", show_label=False, visible=False)
    gr.Markdown("**Intents the annotators disagree on**, lowest agreement first")
    intents = gr.Dataframe(
        headers=INTENTS,
        interactive=False,
        wrap=True,
        elem_id="team-intents",
        datatype=["markdown", "str", "number", "number", "str"],
        column_widths=["18%", "10%", "7%", "8%", "57%"],
        max_height=320,
    )
    with gr.Accordion("Members: who sees this project", open=False, elem_id="team-members"):
        members = gr.Dataframe(headers=MEMBERS, interactive=False, max_height=240)
        with gr.Row(equal_height=True):
            member = gr.Dropdown([], label="User", scale=2, elem_id="member-user")
            member_role = gr.Radio(
                [OWN_ROLE, "viewer", "designer"], value=OWN_ROLE, label="Role here", scale=2
            )
            add_btn = gr.Button("Add / change role", scale=0, min_width=150)
            remove_btn = gr.Button("Remove", variant="stop", scale=0, min_width=100)
        member_status = gr.Markdown(elem_id="member-status")
    shown = [progress, summary, drawn, intents, nobody]
    quiet: dict[str, Any] = {"api_visibility": "private", "show_progress": "hidden"}
    refresh_btn.click(bind(show, serving_state.db), [project], shown, **quiet)
    assign_btn.click(
        guarded(ASSIGN)(bind(assign, serving_state.db)),
        [project, names, overlap, search, limit],
        [status],
        **quiet,
    ).then(bind(show, serving_state.db), [project], shown, **quiet)
    export_btn.click(  # the raw annotations leave the app: as a project's export
        guarded(EXPORT, outputs=2, message=1)(bind(export, serving_state)),
        [project],
        [answers_file, status],
        **quiet,
    )

    for button, fn, args in (
        (add_btn, add_member, [project, member, member_role]),
        (remove_btn, remove_member, [project, member]),
    ):
        button.click(
            guarded(MANAGE_MEMBERS)(bind(fn, serving_state.db)), args, [member_status], **quiet
        ).then(
            bind(member_rows, serving_state.db),
            [project],
            [members, member, member_status],
            **quiet,
        )
    loaded = [names, status, *shown, members, member, member_status]
    return {"refresh": (bind(load, serving_state.db), [project], loaded)}


def load(db: Database, p: ProjectHandle | None) -> tuple[Any, ...]:
    """The tab when it is opened: the annotators one may assign (with the status line: why there
    are none when they could not be read), the overview and the members."""
    choices, err = attempt(lambda: svc.annotator_choices(db, p)) if p else ([], None)
    said = problem(err, notify=False) if err else gr.skip()
    return (gr.update(choices=choices or []), said, *show(db, p), *member_rows(db, p))
