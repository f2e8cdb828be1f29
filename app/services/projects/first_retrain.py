"""Why an automatic retrain runs, in a newcomer's words (issue 75 item 2): a project whose labels
all came in a file retrains by itself at once (its imported labels count as new:
:mod:`app.services.training.auto_retrain`), though nobody has labelled yet. "After new labels"
said nothing to a newcomer who gave none, and the demo's suggestions changed under the first
card; its first retrain now says why, in serve's output when the demo is made and on its job in
the Train tab.

Example:
    >>> imported_words("Demo: Acme support")
    "the demo's labels were imported: retraining once so suggestions use a tuned encoder"
    >>> imported_words("banking77")
    'its labels were imported: retraining once so suggestions use a tuned encoder'
"""

from __future__ import annotations

from functools import lru_cache

from app.services.projects.projects import DEMO_PROJECT
from storage.audit import imported_only
from storage.db import Database
from storage.job_view import JobView

AFTER_LABELS = "after new labels"  # why any other automatic retrain runs


def imported_words(project: str) -> str:
    """Why the first retrain of ``project`` (its name), whose labels were all imported, runs."""
    whose = "the demo's" if project == DEMO_PROJECT else "its"
    return f"{whose} labels were imported: retraining once so suggestions use a tuned encoder"


def why(db: Database, project: str, job: JobView) -> str:
    """Why the automatic ``job`` of ``project`` runs: :func:`imported_words` for the project's
    first job when nobody had labelled, else :data:`AFTER_LABELS` ("" for a manual one)."""
    if job.trigger != "auto":
        return ""
    return imported_words(project) if _imported(db, job.project_id, job.id) else AFTER_LABELS


@lru_cache(maxsize=256)
def _imported(db: Database, project_id: int, job_id: int) -> bool:
    # a job's answer never changes (what came before it was asked for stays), and the Train tab
    # asks again at each tick of the job it follows
    with db.session() as s:
        return imported_only(s, project_id, job_id)


def demo_line(auto_retrain: bool) -> str:
    """What serve says when it has just made the demo project ("" when no retrain will start by
    itself: ``INTENT_STUDIO_AUTO_RETRAIN=off``, or no worker).

    Example:
        >>> demo_line(True).split(": the demo's")[0], demo_line(False)
        ("Demo project 'Demo: Acme support'", '')
    """
    if not auto_retrain:
        return ""
    return (
        f"Demo project '{DEMO_PROJECT}': {imported_words(DEMO_PROJECT)}, once the warm-up "
        "ends (the Train tab follows it; the page works meanwhile)."
    )
