"""The process-wide resources, in documented pieces (docs/internals.md, "The serving state"): the
database; the loaded models (:class:`app.serving.models.Models`); the one builder of a project's
Predictor factories with the embedding cache and the evaluations measured
(:class:`app.serving.factories.FactoryBuilder`); the live pools with their background fits and
the admission of prediction calls (:class:`app.serving.live.LivePools`); the maps
(:class:`app.serving.map_store.MapStore`); the training jobs
(:class:`app.serving.training_queue.TrainingQueue`); the uploads; and whether the process can
serve now (:class:`app.serving.readiness.Readiness`). :class:`ServingState` holds
one of each for a process, and nothing else: a plain record of its pieces, with no method that
hands a call on to one (``serving_state.live.pool(...)``, never ``serving_state.pool(...)``), so each call names the
piece that answers it. A function takes the smallest piece that holds what it uses (``serving_state.db``,
``serving_state.factories``, ``serving_state.live``, ``serving_state.maps``, ``serving_state.training``); the record itself goes only to
what needs settings, uploads or several unrelated pieces.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from app.config import Settings
from app.limits.store import LimitStore, open_limit_store
from app.perimeter.uploads import Uploads
from app.serving.admission import Admission, Limits
from app.serving.eval_memo import EvalMemo
from app.serving.factories import FactoryBuilder
from app.serving.live import CALIBRATION_SETTLE_S, LivePools
from app.serving.map_store import MapStore
from app.serving.models import Models
from app.serving.readiness import Readiness, servers_probe
from app.serving.training_queue import TrainingQueue
from app.serving.vectors import open_cache
from storage.artifacts import ArtifactStore
from storage.db import Database

__all__ = ["CALIBRATION_SETTLE_S", "ServingState"]


@dataclass(frozen=True)
class ServingState:
    """One of each piece of the serving state for a process (:meth:`open` builds them from the
    deployment's settings; :meth:`close` stops their threads and the database)."""

    settings: Settings  # the deployment's (app.config): data dir, URLs, device, int8, team mode
    db: Database
    artifacts: ArtifactStore  # model files: a folder or a bucket
    models: Models
    factories: FactoryBuilder  # with the embedding cache and the evaluation memo
    live: LivePools  # with the admission of prediction calls and the background fits
    maps: MapStore
    training: TrainingQueue  # its queue (``training.enqueue``) is set by the entry point
    # warming up, ready or stopping, and what its servers answer (/health, /ready)
    readiness: Readiness
    # the per-user limits' counts: Redis's when a team has one (every instance shares them)
    limit_store: LimitStore
    # files uploaded through the UI and not used up yet (app.perimeter.upload_gate.UploadGate records them)
    uploads: Uploads

    @classmethod
    def open(
        cls, settings: Settings, *, database: Database | None = None, limits: Limits | None = None
    ) -> ServingState:
        """The pieces for ``settings`` (``database``: one already open, shared; ``limits``: the
        prediction limits, :mod:`app.serving.admission`)."""
        db = database or Database(
            settings.database_url, max_intents=settings.max_intents, max_rows=settings.max_rows
        )
        artifacts = settings.open_artifacts()
        cache = open_cache(settings, artifacts)
        models = Models(artifacts, settings.device, settings.cache_dir)
        factories = FactoryBuilder(db, cache, models, EvalMemo(settings.cache_dir / "evaluations"))
        limit_store = open_limit_store(settings.queue_url)
        live = LivePools(db, cache, models, factories, Admission(limits, limit_store))
        live.auto_retrain = settings.auto_retrain  # what the project's switch is said against
        return cls(
            settings=settings,
            db=db,
            artifacts=artifacts,
            models=models,
            factories=factories,
            live=live,
            maps=MapStore(Path(settings.data_dir) / "maps", factories),
            training=TrainingQueue(db, settings, artifacts),
            readiness=Readiness(servers_probe(settings, db, artifacts)),
            limit_store=limit_store,
            uploads=Uploads(),
        )

    def close(self) -> None:
        """Stop the live pools' background fits (a running one is waited for), then the
        database's connections."""
        self.live.close()
        self.db.dispose()
