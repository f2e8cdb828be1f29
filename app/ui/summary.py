"""The line under the project picker: the project's headline (intents, splits, the model that
serves) and who is acting, the same wherever it is written (a project picked, a change, an
import into a new name)."""

from __future__ import annotations

from app.access import ProjectHandle
from app.access.auth import current_actor
from app.services.projects import projects as project_svc
from app.ui.common import attempt, md_text, problem
from storage.db import Database


def summary_line(db: Database, p: ProjectHandle | None, *, team: bool) -> str:
    """The project's summary line (Markdown, every name in it plain text); with no project, how
    to get one. ``team``: the app runs for a team (signed-in users), so the line says who is
    acting."""
    if team:
        who = current_actor()
        where = f", {p.role} here" if p is not None and p.role != who.role else ""
        mode = f"signed in as **{md_text(who.name)}** ({who.role}{where})"
    else:
        mode = "single-user local mode"
    if p is None:
        return f"No project yet: create one above or import a file in the Data tab. · {mode}"
    s, err = attempt(lambda: project_svc.summary(db, p))
    if err or s is None:
        return problem(err or "unknown project")
    # the name as plain text: a bundle's manifest names its project (issue 56, row 3)
    return f"**{md_text(s.name)}** · {md_text(s.details())} · {mode}"
