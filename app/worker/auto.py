"""A worker's watcher of labels: every :attr:`app.serving.compute.ComputeBudget.auto_poll_s` it
queues the automatic retrains that are due (:class:`app.services.training.auto_retrain.Watcher`),
until the worker stops; a stopping worker starts nothing new. Off where the deployment says so
(``INTENT_STUDIO_AUTO_RETRAIN=off``)."""

from __future__ import annotations

import logging
import threading

from app.services.training.auto_retrain import Watcher
from app.serving.compute import ComputeBudget
from app.serving.training_queue import TrainingQueue
from app.worker.stopping import StopRequest
from core.errors import logged
from storage.errors import DatabaseUnavailable

logger = logging.getLogger(__name__)


def watch_labels(
    training: TrainingQueue,
    budget: ComputeBudget,
    stop: StopRequest,
    done: threading.Event,
    every: float | None = None,
) -> threading.Thread | None:
    """Start the watcher in a background thread (None where the deployment turned it off)."""
    if not training.settings.auto_retrain:
        logger.info("automatic retrains are off in this deployment")
        return None
    watcher = Watcher(training, budget)
    every = budget.auto_poll_s if every is None else every

    def run() -> None:
        while not done.wait(every) and not stop.requested:
            try:
                watcher.start_due()
            except DatabaseUnavailable as exc:  # back at the next look
                logger.warning("automatic retrains wait for the database: %s", exc)
            except Exception:  # a bug is logged with its traceback; the next look tries again
                logged(logger, "could not start the automatic retrains")

    thread = threading.Thread(target=run, name="auto-retrain", daemon=True)
    thread.start()
    return thread
