"""The training jobs as the request side sees them: the database they are rows in, the queue a
new one is handed to, and the deployment's rules for them (:mod:`app.services.training.retrain_jobs`
requests, cancels and reaps jobs through it; :mod:`app.worker` runs them).

Guarantees: a job is a row before it is queued, so a queue that lost its message is seen (a row
queued for long with no message) and re-queued; with no queue (:attr:`TrainingQueue.enqueue` is
None) a retrain is refused, never left waiting. No lock of its own: the database's write lock
orders the rows. Used by the server and the CLI (which set :attr:`enqueue`) and the worker.
"""

from __future__ import annotations

from typing import Protocol

from app.config import Settings
from storage.artifacts import ArtifactStore
from storage.db import Database


class JobQueue(Protocol):
    """The training queue as the request side sees it (:func:`app.worker.queue_for`): calling it
    queues a job id; :meth:`pending` gives the ids whose message it holds, not yet taken."""

    def __call__(self, job_id: int) -> None: ...

    def pending(self) -> set[int]: ...


class TrainingQueue:
    def __init__(
        self, db: Database, settings: Settings, artifacts: ArtifactStore | None = None
    ) -> None:
        self.db = db
        # what the rules read: where workers run, when a job is dead, what a job must carry
        self.settings = settings
        # where a job's model goes: a retrain is refused while it does not answer
        self.artifacts = artifacts
        # queues a training job id; set by the entry point that runs a queue (app.worker)
        self.enqueue: JobQueue | None = None
