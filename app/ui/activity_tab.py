"""The Activity tab: every change as one row per action (a bulk label of 54 utterances is one
row), who made it and when; any recent change that later edits did not touch can be undone."""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from app.access import ProjectHandle
from app.access.actions import UNDO
from app.services.labelling import history as svc
from app.ui.common import attempt, bind, breakable, ok, problem
from app.ui.guard import guarded
from app.ui.security_log import build_security_section
from storage.db import Database

# the batch id is for undo, not people; the intents beside the example they are the intents of
SHOWN = ["when", "user", "action", "rows", "example", "intents", "state"]


def _table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The rows as the table shows them: intent names break only after an underscore."""
    shown = [{**r, "intents": breakable(r["intents"])} for r in rows]
    return pd.DataFrame(shown, columns=SHOWN)


def show(db: Database, p: ProjectHandle | None) -> tuple[pd.DataFrame, list[dict[str, Any]], Any]:
    """The changes, newest first, and the status line: why there are none when they could not
    be read (else left as it is: an undo's message stays)."""
    if p is None:
        return pd.DataFrame(columns=SHOWN), [], gr.skip()
    rows, err = attempt(lambda: svc.activity(db, p))
    said = problem(err, notify=False) if err else gr.skip()
    return _table(rows or []), rows or [], said


def pick(rows: list[dict[str, Any]], evt: gr.SelectData) -> tuple[str, str]:
    row_idx = evt.index[0] if isinstance(evt.index, list | tuple) else evt.index
    row = rows[int(row_idx)]
    if not row["batch"]:  # a retrain: its version is rolled back in Train → Versions
        return "", f"A {row['action']} at {row['when']}: {row['example']} ({row['state']})."
    what = f"{row['action']} of {row['rows']} utterance(s) by {row['user']} at {row['when']}"
    return str(row["batch"]), f"Selected: {what} ({row['state']})."


def undo_selected(db: Database, p: ProjectHandle, batch: str) -> str:
    if not batch:
        return problem("Click a change in the table first.")
    msg, err = attempt(lambda: svc.undo_batch(db, p, batch))
    return problem(err) if err else ok(msg or "")


def build_activity_tab(db: Database, project: gr.Dropdown) -> dict[str, Any]:
    gr.Markdown(
        "Every change, newest first: one row per action, however many utterances it touched. "
        "Click a row, then **Undo this change**; a change that later edits touched cannot be "
        "undone until those are."
    )
    with gr.Row():
        picked = gr.Markdown("Click a change to select it.", elem_id="activity-picked")
        undo_btn = gr.Button("Undo this change", scale=0, min_width=230, elem_id="activity-undo")
        refresh_btn = gr.Button("Refresh", scale=0)
    status = gr.Markdown(elem_id="activity-status")
    table = gr.Dataframe(
        headers=SHOWN,
        interactive=False,
        wrap=True,
        elem_id="activity",
        datatype=["str", "str", "str", "str", "str", "markdown", "str"],
        column_widths=["13%", "7%", "9%", "5%", "33%", "18%", "15%"],
        max_height=560,
    )
    rows = gr.State([])
    batch = gr.Textbox(visible=False)
    table.select(pick, [rows], [batch, picked], api_visibility="private")
    shown = [table, rows, status]
    refresh_btn.click(bind(show, db), [project], shown, api_visibility="private")
    undo_btn.click(
        guarded(UNDO)(bind(undo_selected, db)),
        [project, batch],
        [status],
        api_visibility="private",
    ).then(bind(show, db), [project], shown, api_visibility="private")
    build_security_section(db)
    return {"refresh": (bind(show, db), [project], shown)}
