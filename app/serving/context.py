"""The process-wide resources, in documented pieces (ARCHITECTURE.md, "The serving state"): the
database; the loaded models (:class:`app.serving.models.Models`); the one builder of a project's
Predictor factories with the embedding cache and the evaluations measured
(:class:`app.serving.factories.FactoryBuilder`); the live pools with their background fits and
the admission of prediction calls (:class:`app.serving.live.LivePools`); the maps
(:class:`app.serving.map_store.MapStore`); the training jobs
(:class:`app.serving.training_queue.TrainingQueue`); the uploads; and whether the process can
serve now (:class:`app.serving.readiness.Readiness`). :class:`AppContext` holds
one of each for a process. A function takes the smallest piece that holds what it uses
(``ctx.db``, ``ctx.factories``, ``ctx.live``, ``ctx.maps``, ``ctx.training``); the context
itself goes only to what needs settings, uploads or several unrelated pieces. Its methods that
hand a call to a piece are kept for the entry points and tests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from app.config import Settings
from app.limit_store import open_limit_store
from app.perimeter.uploads import Uploads
from app.serving.admission import Admission, Limits
from app.serving.eval_memo import EvalMemo
from app.serving.factories import FactoryBuilder
from app.serving.live import CALIBRATION_SETTLE_S, LivePools
from app.serving.map_store import MapStore
from app.serving.models import Models
from app.serving.pools import ProjectPool
from app.serving.readiness import Readiness, servers_probe
from app.serving.training_queue import JobQueue, TrainingQueue
from app.serving.vectors import open_cache
from core.encoding.cache import CachedEncoder, EmbeddingCache
from core.encoding.registry import Encoder
from core.evaluation.data import EvalData
from core.multilabel.head import MultiLabelHead
from core.retrieval.factory import PredictorFactory
from core.retrieval.predictor import TextEncoder
from storage.artifacts import ArtifactStore
from storage.db import Database
from storage.tables import ModelVersion
from storage.utterances import UtteranceRow

__all__ = ["CALIBRATION_SETTLE_S", "AppContext"]


class AppContext:
    def __init__(
        self, settings: Settings, *, database: Database | None = None, limits: Limits | None = None
    ) -> None:
        self.settings = settings
        self.db = database or Database(
            settings.database_url, max_intents=settings.max_intents, max_rows=settings.max_rows
        )
        self.artifacts: ArtifactStore = settings.open_artifacts()
        cache = open_cache(settings, self.artifacts)
        self.device = settings.device
        self.models = Models(self.artifacts, settings.device)
        memo = EvalMemo(settings.cache_dir / "evaluations")
        self.factories = FactoryBuilder(self.db, cache, self.models, memo)
        self.maps = MapStore(Path(settings.data_dir) / "maps", self.factories)
        # the per-user limits' counts: Redis's when a team has one (every instance shares them)
        self.limit_store = open_limit_store(settings.queue_url)
        admission = Admission(limits, self.limit_store)
        self.live = LivePools(self.db, cache, self.models, self.factories, admission)
        # the live pools' background fits, named here for the callers that wait for them
        self.heads = self.live.heads
        self.calibrations = self.live.calibrations
        self.kept_heads = self.live.kept_heads
        self.training = TrainingQueue(self.db, settings, self.artifacts)
        # warming up, ready or stopping, and what its servers answer (/health, /ready)
        self.readiness = Readiness(servers_probe(settings, self.db, self.artifacts))
        # files uploaded through the UI and not used up yet (app.perimeter.upload_gate.UploadGate records them)
        self.uploads = Uploads()

    @property
    def admission(self) -> Admission:
        """Who may ask for predictions now (:mod:`app.serving.admission`), held by the live pools."""
        return self.live.admission

    @admission.setter
    def admission(self, admission: Admission) -> None:  # a test's own limits
        self.live.admission = admission

    @property
    def enqueue(self) -> JobQueue | None:
        """The training queue (:attr:`app.serving.training_queue.TrainingQueue.enqueue`)."""
        return self.training.enqueue

    @enqueue.setter
    def enqueue(self, queue: JobQueue | None) -> None:  # set by the entry point that runs a queue
        self.training.enqueue = queue

    @property
    def cache(self) -> EmbeddingCache:
        """The process's embedding cache (:func:`app.serving.vectors.open_cache`), shared by the pieces."""
        return self.live.cache

    @cache.setter
    def cache(self, cache: EmbeddingCache) -> None:  # a bench's own cache: every piece uses it
        self.factories.cache = self.live.cache = cache

    # --- models (app.serving.models) ------------------------------------------------------

    def base_encoder(self, name: str = "minilm") -> Encoder:
        return self.models.base_encoder(name)

    def encoder_for_version(self, mv: ModelVersion | None, base: str = "minilm") -> Encoder:
        return self.models.encoder_for_version(mv, base)

    def serving_encoder(
        self, mv: ModelVersion | None, base: str, settings: dict[str, object] | None
    ) -> CachedEncoder:
        return self.models.serving_encoder(mv, base, settings)

    def version_head(self, mv: ModelVersion | None) -> MultiLabelHead | None:
        return self.models.version_head(mv)

    def active_version(self, project_id: int) -> tuple[ModelVersion | None, str]:
        return self.factories.active_version(project_id)

    def active_encoder(self, project_id: int) -> tuple[Encoder, int | None]:
        return self.factories.active_encoder(project_id)

    # --- predictor factories (app.serving.factories) ---------------------------------------

    def predictor_factory(
        self,
        project_id: int,
        encoder: TextEncoder,
        *,
        head: MultiLabelHead | None = None,
    ) -> PredictorFactory:
        return self.factories.predictor_factory(project_id, encoder, head=head)

    def version_factory(
        self,
        project_id: int,
        mv: ModelVersion | None,
        base: str = "minilm",
        settings: dict[str, object] | None = None,
        *,
        served: bool = False,
    ) -> PredictorFactory:
        return self.factories.version_factory(project_id, mv, base, settings, served=served)

    # --- live pools (app.serving.live) -----------------------------------------------------

    def pool(self, project_id: int, stamp: tuple[int, ...] | None = None) -> ProjectPool:
        return self.live.pool(project_id, stamp)

    def pool_after(
        self,
        project_id: int,
        before: tuple[int, ...],
        after: tuple[int, ...],
        rows: Mapping[int, UtteranceRow | None],
    ) -> None:
        self.live.pool_after(project_id, before, after, rows)

    def head_data(self, project_id: int) -> EvalData | None:
        return self.live.head_data(project_id)

    def space_head(
        self,
        project_id: int,
        encoder: TextEncoder,
        data: EvalData | None = None,
        should_cancel: Callable[[], bool] | None = None,
    ) -> MultiLabelHead | None:
        return self.live.space_head(project_id, encoder, data, should_cancel)

    def warm_up(self) -> None:
        """Load the encoders and build the pools of every project (call in a background thread at
        start-up, so the first request does not pay for it)."""
        self.live.warm_up()

    def forget_pool(self, project_id: int) -> None:
        self.live.forget_pool(project_id)

    def close(self) -> None:
        self.live.close()
        self.db.dispose()
