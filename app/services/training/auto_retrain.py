"""Retrains that start from the labels (issue 63), when they can pay (issue 71 item 2): once what
the labels changed since the last retrain read the project weighs ``auto_retrain_after`` (20 by
default), and nobody has worked on it for the device's quiet spell
(:attr:`app.serving.compute.ComputeBudget.auto_quiet_s`: 6 s on a CPU, 3 s on a GPU), an
anytime retrain of it is queued by itself (``trigger="auto"``), as if its local operator had
asked (in the queue's turns it counts for whoever labelled the project last:
:mod:`storage.job_order`). The project setting ``auto_retrain`` switches it
off; a deployment turns the watcher off with ``INTENT_STUDIO_AUTO_RETRAIN=off``.

**What counts** is what can change the model, net (:func:`weigh`, on
:func:`storage.job_history.changes_since_last_job`): each utterance whose place in the pool (the
labelled `train` rows a retrain learns from) differs from when the last retrain read it, so an
edit and its undo (a bulk label of 125 rows undone) weigh nothing:

- an example that joins the pool or leaves it weighs 1, or 2 where the model that served had
  decided otherwise on the card the label answered (the Label tab keeps its decision; a label
  given elsewhere is not known: 1);
- an example moved to another intent weighs 2 (what the model learnt from it was wrong);
- in a pool of more than :data:`POOL_REF` examples each of those weighs ``POOL_REF / N``: the
  pool's growth relative to its size (20 examples in a pool of 770 weigh 20, in one of 10,000
  weigh 2: 200 start one there, 2 % of it);
- a new intent (examples in the pool now, none then) weighs :data:`NEW_INTENT` besides its
  examples: the encoder has never seen it.

**Quiet** means nobody works on the project (:func:`quiet_since`): the spell counts from the
project's last label event, or the Label tab's last key (typing an intent's name included) or
card shown, whichever is later; a card asked for and not yet shown holds it
(:class:`app.perimeter.in_use.Working` writes that time to the database, so a worker on another
machine reads it). A slow card between two answers, or a designer typing a name, starts nothing.

At most one job per project is queued or running (the one-job rule of
:func:`app.services.training.retrain_jobs.request_retrain`, checked in the project's write lock,
so two workers watching never start two): labels given while one runs count towards the next,
which starts once it ended and the project is quiet again. Workers take the queued jobs in a
fair order (:mod:`storage.job_order`): a request someone made goes ahead of every automatic one,
and users take turns, so one designer's automatic retrains never starve another's.

The watcher runs in each training worker (:mod:`app.worker.auto`), :meth:`Watcher.start_due`
every :attr:`~app.serving.compute.ComputeBudget.auto_poll_s`. A project whose retrain is refused
(too few labelled intents, say) is not asked again until it has newer labels. None starts while
the server on the same machine warms up (its data directory's ``warming`` file,
:func:`app.perimeter.in_use.warming`): the first card waits for that warm-up, and an imported
project's own retrain would take its cores.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from app.access import ProjectHandle, open_project
from app.access.auth import LOCAL
from app.config import ENV_AUTO_RETRAIN
from app.perimeter.in_use import server_warming
from app.project_settings import ProjectSettings, settings_of
from app.services.training.retrain_jobs import request_retrain
from app.serving.compute import ComputeBudget
from app.serving.training_queue import TrainingQueue
from core.retrieval.scope import OUT_OF_SCOPE
from storage import jobs
from storage.activity import active_at
from storage.db import Database, Session
from storage.job_history import PoolChange, PoolChanges, changes_since_last_job, label_marks
from storage.job_view import JobView
from storage.projects import list_projects

logger = logging.getLogger(__name__)

# A pool larger than this counts each changed example as its share of it (POOL_REF / N).
POOL_REF = 1000
# What a new intent weighs besides its examples.
NEW_INTENT = 10.0
# The rule in one line (the settings' line, the CLI's and REST's; docs/user-guide.md).
RULE = (
    "an example added or removed weighs 1 (2 where the model had decided otherwise), one moved "
    f"to another intent 2, a new intent {NEW_INTENT:g} more; in a pool over {POOL_REF:,} "
    f"examples each weighs {POOL_REF:,}/N; edits undone weigh nothing"
)


def _said(decision: frozenset[str]) -> frozenset[str]:
    """A decision as labels say it: out of scope is no intent."""
    return decision - {OUT_OF_SCOPE}


def example_weight(change: PoolChange) -> float:
    """What one changed example weighs before the pool's size (see the module).

    Example:
        >>> a, b = frozenset({"card_lost"}), frozenset({"card_arrival"})
        >>> example_weight(PoolChange(None, a)), example_weight(PoolChange(None, a, served=b))
        (1.0, 2.0)
        >>> example_weight(PoolChange(None, a, served=a)), example_weight(PoolChange(b, a))
        (1.0, 2.0)
    """
    if change.then is not None and change.now is not None:
        return 2.0  # moved to another intent
    if change.now is not None and change.served is not None:
        return 2.0 if _said(change.served) != _said(change.now) else 1.0
    return 1.0


def new_intents(changes: PoolChanges) -> list[str]:
    """The intents with examples in the pool now and none when the last retrain read it."""
    then = dict(changes.per_intent)
    for change in changes.changes:
        for name in change.now or ():
            then[name] = then.get(name, 0) - 1
        for name in change.then or ():
            then[name] = then.get(name, 0) + 1
    return sorted(
        name
        for name, count in changes.per_intent.items()
        if count > 0 and then.get(name, 0) <= 0 and name != OUT_OF_SCOPE
    )


def weigh(changes: PoolChanges) -> float:
    """What the labels changed since the last retrain read the project weigh (see the module).

    Example:
        >>> lost = frozenset({"card_lost"})
        >>> twenty = PoolChanges(tuple(PoolChange(None, lost) for _ in range(20)), 790,
        ...                      {"card_lost": 30})
        >>> weigh(twenty)  # 20 new examples in a pool of 770
        20.0
        >>> weigh(PoolChanges(twenty.changes, 10_020, {"card_lost": 30}))  # of 10,000
        2.0
        >>> weigh(PoolChanges(twenty.changes, 40, {"card_lost": 20}))  # and a new intent
        30.0
        >>> weigh(PoolChanges((), 790, {"card_lost": 30}))  # a bulk label and its undo
        0.0
    """
    joined = sum(1 for c in changes.changes if c.then is None and c.now is not None)
    left = sum(1 for c in changes.changes if c.then is not None and c.now is None)
    pool_then = changes.pool - joined + left
    share = min(1.0, POOL_REF / pool_then) if pool_then > 0 else 1.0
    examples = sum(example_weight(c) for c in changes.changes) * share
    return round(examples + NEW_INTENT * len(new_intents(changes)), 2)


@dataclass(frozen=True)
class AutoState:
    """A project's automatic retrain now: on or off, the weight that starts one, what the
    changes since the last retrain weigh (:func:`weigh`), and whether a job is under way."""

    on: bool
    after: int
    weight: float
    active: bool
    quiet_s: float = 6.0  # the device's pause (ComputeBudget.auto_quiet_s)
    deployment: bool = True  # the deployment's switch (Settings.auto_retrain): off wins

    @property
    def so_far(self) -> str:
        """What the changes weigh so far, up to ``after``: "7.5 of 20"."""
        return f"{min(self.weight, self.after):g} of {self.after}"

    @property
    def words(self) -> str:
        """One line for the Data tab's settings, the CLI's and REST's: with what each change
        weighs (:data:`RULE`)."""
        return self._said(f" ({RULE})")

    @property
    def brief(self) -> str:
        """:attr:`words` without what each change weighs: the line beside the Train tab's
        switch (it fits at 1280x720; the settings say the rule).

        Example:
            >>> on = AutoState(True, 20, 7.5, False)
            >>> RULE in on.words, RULE in on.brief, on.words.replace(f" ({RULE})", "") == on.brief
            (True, False, True)
        """
        return self._said("")

    def _said(self, rule: str) -> str:
        if not self.deployment:  # the project's switch says on, but no worker watches
            return (
                f"Off for this deployment ({ENV_AUTO_RETRAIN}=off): the encoder is retrained "
                "only when someone asks (Train tab, CLI, REST); this project's switch "
                f"({'on' if self.on else 'off'}) counts once the deployment turns it on."
            )
        if not self.on:
            return "Off: the encoder is retrained only when someone asks (Train tab, CLI, REST)."
        now = "a retrain is under way" if self.active else f"{self.so_far} since the last retrain"
        return (
            f"On: once the changes since the last retrain weigh {self.after}{rule} and "
            f"nobody has labelled, pressed a key or waited for a card for {self.quiet_s:g} s, "
            f"the worker retrains by itself ({now})."
        )


def state(
    db: Database, p: ProjectHandle, budget: ComputeBudget, deployment: bool = True
) -> AutoState:
    """The project's automatic retrain now (:class:`AutoState`), on ``budget``'s device, in a
    deployment whose watcher is on (``deployment``: :attr:`app.config.Settings.auto_retrain`)."""
    with db.session() as s:
        changes = changes_since_last_job(s, p.id)
    return AutoState(
        p.settings.auto_retrain,
        p.settings.auto_retrain_after,
        weigh(changes),
        changes.active,
        budget.auto_quiet_s,
        deployment,
    )


def quiet_since(last_label: datetime | None, last_work: datetime | None) -> datetime | None:
    """When the project's quiet spell began: its last label event or its last work in the Label
    tab, whichever is later (None: neither)."""
    return max((t for t in (last_label, last_work) if t is not None), default=None)


def due(
    settings: ProjectSettings,
    weight: float,
    since: datetime | None,
    now: datetime,
    quiet_s: float,
    active: bool = False,
) -> bool:
    """Whether changes weighing ``weight`` call for an automatic retrain ``now``, quiet
    ``since`` then (:func:`quiet_since`) for at least ``quiet_s`` seconds, no job under way.

    Example:
        >>> from datetime import datetime, timedelta
        >>> t = datetime(2026, 11, 27, 12, 0, 0)
        >>> due(ProjectSettings(), 20, t, t + timedelta(seconds=11), 10.0)
        True
        >>> due(ProjectSettings(), 20, t, t + timedelta(seconds=3), 10.0)  # still working
        False
        >>> due(ProjectSettings(), 19.5, t, t + timedelta(seconds=60), 10.0)
        False
        >>> due(ProjectSettings(), 20, t, t + timedelta(seconds=60), 10.0, active=True)
        False
        >>> due(ProjectSettings(auto_retrain=False), 20, t, t + timedelta(seconds=60), 10.0)
        False
    """
    return (
        settings.auto_retrain
        and not active
        and weight >= settings.auto_retrain_after
        and since is not None
        and (now - since).total_seconds() >= quiet_s
    )


class Watcher:
    """Starts the automatic retrains that are due (:meth:`start_due`), remembering the projects
    whose retrain was refused until they have newer labels, and what each project's changes
    weighed while its labels and its last retrain stay the same."""

    def __init__(self, training: TrainingQueue, budget: ComputeBudget) -> None:
        self.training = training
        self.quiet_s = budget.auto_quiet_s
        self.refused: dict[int, int] = {}  # project id -> its newest label event when refused
        # project id -> ((its mark, its newest label event), its changes, their weight)
        self._weighed: dict[int, tuple[tuple[int, int], PoolChanges, float]] = {}

    def start_due(self) -> list[JobView]:
        """Queue an automatic retrain of every project whose labels call for one; the jobs
        queued (none while the server beside it warms up)."""
        if server_warming(self.training.settings.data_dir):
            return []
        db = self.training.db
        with db.session() as s:
            projects = list_projects(s)
        started = []
        for project in projects:
            pid = project.id
            try:
                settings = settings_of(project)
            except ValueError:  # said where the project is opened; nothing to start here
                continue
            if not settings.auto_retrain:
                continue
            with db.session() as s:
                changes, weight = self._changes(s, pid)
                since = quiet_since(changes.last_at, active_at(s, pid))
                now, active = jobs.clock(s), jobs.active_job(s, pid) is not None
            if not due(settings, weight, since, now, self.quiet_s, active):
                continue
            if self.refused.get(pid) == changes.newest:
                continue
            if (view := self._start(open_project(db, pid, LOCAL), changes, weight)) is not None:
                started.append(view)
        return started

    def _changes(self, s: Session, pid: int) -> tuple[PoolChanges, float]:
        """The project's changes since its last retrain and their weight, read again only when
        its labels or its last retrain moved."""
        marks = label_marks(s, pid)
        seen = self._weighed.get(pid)
        if seen is not None and seen[0] == marks:
            return seen[1], seen[2]
        changes = changes_since_last_job(s, pid)
        weight = weigh(changes)
        self._weighed[pid] = (marks, changes, weight)
        return changes, weight

    def _start(self, p: ProjectHandle, changes: PoolChanges, weight: float) -> JobView | None:
        try:
            view, created = request_retrain(self.training, p, trigger="auto")
        except ValueError as exc:  # the project cannot be trained now: not again until it changes
            self.refused[p.id] = changes.newest
            logger.warning("project %s: no automatic retrain: %s", p.name, exc)
            return None
        if not created:
            return None
        logger.info(
            "project %s: automatic retrain job #%d (changes weighing %g: %d examples, %d new "
            "intents)",
            p.name,
            view.id,
            weight,
            len(changes.changes),
            len(new_intents(changes)),
        )
        return view
