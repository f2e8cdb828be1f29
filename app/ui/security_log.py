"""The security log for admins (issue 56, row 11), in the Activity tab: sign-ins (and failed and
held ones), sign-outs, refused calls, account and membership changes, exports, reports, bundles
and new projects, newest first, filtered by user and action. ``intent-studio audit`` prints the
same from the command line."""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from app.access.actions import READ_SECURITY_LOG
from app.services.projects import accounts
from app.ui.common import attempt, bind, md_text, problem
from app.ui.guard import guarded
from storage.db import Database

ANY = "(any action)"
SHOWN = 200  # events shown at once, newest first


def read_log(db: Database, user: str, action: str) -> tuple[Any, str]:
    """The newest events of ``user`` (any: empty) and ``action`` (any: :data:`ANY`), and what
    they are."""
    rows, err = attempt(
        lambda: accounts.security_log(
            db, SHOWN, user=(user or "").strip() or None, action=None if action == ANY else action
        )
    )
    if err is not None or rows is None:
        return gr.update(), problem(err or "")
    frame = pd.DataFrame(
        [
            [str(r[c]) if c != "at" else f"{r[c]:%Y-%m-%d %H:%M:%S}" for c in accounts.COLUMNS]
            for r in rows
        ],
        columns=list(accounts.COLUMNS),
    )
    who = f" of {md_text(user.strip())}" if user and user.strip() else ""
    what = f", {md_text(action)}" if action and action != ANY else ""
    more = f" (the newest {SHOWN})" if len(rows) == SHOWN else ""
    return frame, f"{len(rows)} event(s){who}{what}{more}, newest first (UTC)."


def build_security_section(db: Database) -> None:
    """The admins' view of the security log (an accordion at the foot of the Activity tab)."""
    with gr.Accordion("Security log (admins)", open=False, elem_id="security-log"):
        with gr.Row(equal_height=True):
            user = gr.Textbox(label="User", placeholder="any user", scale=2, max_lines=1)
            action = gr.Dropdown([ANY, *accounts.ACTIONS], value=ANY, label="Action", scale=2)
            show = gr.Button("Show", scale=0, min_width=120, elem_id="security-log-show")
        status = gr.Markdown(elem_id="security-log-status")
        table = gr.Dataframe(
            headers=list(accounts.COLUMNS),
            interactive=False,
            wrap=True,
            max_height=420,
            column_widths=["15%", "11%", "10%", "10%", "12%", "42%"],
            elem_id="security-log-table",
        )
    read = guarded(READ_SECURITY_LOG, outputs=2, message=1)(bind(read_log, db))
    for trigger in (show.click, user.submit, action.change):
        trigger(read, [user, action], [table, status], api_visibility="private")
