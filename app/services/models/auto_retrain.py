"""Retrains that start from the labels (issue 63): once a project has ``auto_retrain_after``
new or changed labels since its last retrain read its data, and nobody has labelled it for
the device's pause (:attr:`app.serving.compute.ComputeBudget.auto_quiet_s`: 10 s on a CPU, 3 s on a
GPU), an anytime retrain of it is queued by itself (``trigger="auto"``), as if
its local operator had asked. The project setting ``auto_retrain`` switches it off; a deployment
turns the watcher off with ``INTENT_STUDIO_AUTO_RETRAIN=off``.

At most one job per project is queued or running (the one-job rule of
:func:`app.services.models.retrain_jobs.request_retrain`, checked in the project's write lock,
so two workers watching never start two): labels given while one runs count towards the next,
which starts once it ended and the labels paused again. The queue takes each project's job in
turn (first queued, first run), so a project whose annotators never stop labelling gets one
job in the queue at a time and cannot starve another project's retrain.

The watcher runs in each training worker (:mod:`app.worker.auto`), :func:`start_due` every
:attr:`~app.serving.compute.ComputeBudget.auto_poll_s`. A project whose retrain is refused (too few labelled intents, say) is not
asked again until it has newer labels. None starts while the server on the same machine warms up
(its data directory's ``warming`` file, :func:`app.perimeter.in_use.warming`): the first card
waits for that warm-up, and an imported project's own retrain would take its cores.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from app.access import ProjectHandle, open_project
from app.access.auth import LOCAL
from app.perimeter.in_use import server_warming
from app.project_settings import ProjectSettings, stored_settings
from app.services.models.retrain_jobs import request_retrain
from app.serving.compute import ComputeBudget
from app.serving.training_queue import TrainingQueue
from storage import jobs
from storage.db import Database
from storage.job_history import LabelsSince, labels_since_last_job
from storage.jobs import JobView
from storage.projects import list_projects

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class AutoState:
    """A project's automatic retrain now: on or off, the labels that start one, those given
    since the last retrain (counted up to ``after``), and whether a job is under way."""

    on: bool
    after: int
    changed: int
    active: bool
    quiet_s: float = 10.0  # the device's pause (ComputeBudget.auto_quiet_s)

    @property
    def words(self) -> str:
        """One line for the Data tab's settings, the CLI's and REST's."""
        if not self.on:
            return "Off: the encoder is retrained only when someone asks (Train tab, CLI, REST)."
        now = (
            "a retrain is under way"
            if self.active
            else f"{min(self.changed, self.after)} of {self.after} since the last retrain"
        )
        return (
            f"On: after {self.after} new or changed labels and {self.quiet_s:g} s without a "
            f"label, the worker retrains by itself ({now})."
        )


def state(db: Database, p: ProjectHandle, budget: ComputeBudget) -> AutoState:
    """The project's automatic retrain now (:class:`AutoState`), on ``budget``'s device."""
    after = p.settings.auto_retrain_after
    with db.session() as s:
        since = labels_since_last_job(s, p.id, after)
    return AutoState(
        p.settings.auto_retrain, after, since.changed, since.active, budget.auto_quiet_s
    )


def due(settings: ProjectSettings, since: LabelsSince, now: datetime, quiet_s: float) -> bool:
    """Whether labels this far call for an automatic retrain now, after ``quiet_s`` seconds
    without a label.

    Example:
        >>> from datetime import datetime, timedelta
        >>> t = datetime(2026, 11, 27, 12, 0, 0)
        >>> twenty = LabelsSince(20, t, 99, False)
        >>> due(ProjectSettings(), twenty, t + timedelta(seconds=11), 10.0)
        True
        >>> due(ProjectSettings(), twenty, t + timedelta(seconds=3), 10.0)  # still labelling
        False
        >>> due(ProjectSettings(), LabelsSince(19, t, 98, False), t + timedelta(seconds=60), 10.0)
        False
        >>> due(ProjectSettings(), LabelsSince(20, t, 99, True), t + timedelta(seconds=60), 10.0)
        False
        >>> due(ProjectSettings(auto_retrain=False), twenty, t + timedelta(seconds=60), 10.0)
        False
    """
    return (
        settings.auto_retrain
        and not since.active
        and since.changed >= settings.auto_retrain_after
        and since.last_at is not None
        and (now - since.last_at).total_seconds() >= quiet_s
    )


class Watcher:
    """Starts the automatic retrains that are due (:meth:`start_due`), remembering the projects
    whose retrain was refused until they have newer labels."""

    def __init__(self, training: TrainingQueue, budget: ComputeBudget) -> None:
        self.training = training
        self.quiet_s = budget.auto_quiet_s
        self.refused: dict[int, int] = {}  # project id -> its newest label event when refused

    def start_due(self) -> list[JobView]:
        """Queue an automatic retrain of every project whose labels call for one; the jobs
        queued (none while the server beside it warms up)."""
        if server_warming(self.training.settings.data_dir):
            return []
        db = self.training.db
        with db.session() as s:
            projects = [(p.id, p.name, p.settings) for p in list_projects(s)]
            now = jobs.clock(s)
        started = []
        for pid, name, stored in projects:
            try:
                settings = stored_settings(name, stored)
            except ValueError:  # said where the project is opened; nothing to start here
                continue
            if not settings.auto_retrain:
                continue
            with db.session() as s:
                since = labels_since_last_job(s, pid, settings.auto_retrain_after)
            if not due(settings, since, now, self.quiet_s) or self.refused.get(pid) == since.newest:
                continue
            if (view := self._start(open_project(db, pid, LOCAL), since)) is not None:
                started.append(view)
        return started

    def _start(self, p: ProjectHandle, since: LabelsSince) -> JobView | None:
        try:
            view, created = request_retrain(self.training, p, trigger="auto")
        except ValueError as exc:  # the project cannot be trained now: not again until it changes
            self.refused[p.id] = since.newest
            logger.warning("project %s: no automatic retrain: %s", p.name, exc)
            return None
        if not created:
            return None
        logger.info(
            "project %s: automatic retrain job #%d (%d labels changed)",
            p.name,
            view.id,
            since.changed,
        )
        return view
