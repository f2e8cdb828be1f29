"""The worker's own job reporter, keeping a copy of the job row after each of its writes: what a
test of a retrain's progress reads (the Train tab polls the same row)."""

from __future__ import annotations

from typing import ClassVar

from app import worker
from app.services.training import retrain_jobs as svc


class RecordingReporter(worker.JobReporter):
    """:class:`app.worker.JobReporter`, with ``rows``: the job row after each write."""

    rows: ClassVar[list] = []

    def _keep(self) -> None:
        RecordingReporter.rows.append(svc.job(self.training, self.job_id))

    def log(self, line, *, phase=None) -> None:
        super().log(line, phase=phase)
        self._keep()

    def progress(self, p) -> None:
        super().progress(p)
        self._keep()

    def evaluation(self, p) -> None:
        super().evaluation(p)
        self._keep()

    def vectors(self, done, total, eta) -> None:
        super().vectors(done, total, eta)
        self._keep()
