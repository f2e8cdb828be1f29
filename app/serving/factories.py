"""The one builder of a project's :class:`~core.retrieval.factory.PredictorFactory`: its anchors
as the project sets them, its context encoding, the multi-label head of a version. The live pool, a version's evaluation, the Map, the drill-down and a retrain's
evaluation all build their Predictors from it, so they decide alike.

Guarantees: each call takes the project's settings from its caller (the request's handle,
:attr:`app.access.ProjectHandle.settings`, or the row a live pool or a retrain read), reads the
intents as they are now (one database session) and encodes the anchors through the embedding
cache. Lock: none of its own (the models
it asks for take :class:`app.serving.models.Models`' lock). Used by every process.
"""

from __future__ import annotations

from typing import cast

from app.project_settings import ProjectSettings
from app.serving.eval_memo import EvalMemo
from app.serving.models import Models
from app.serving.pools import project_anchors
from core.encoding.anchor_encoder import anchor_encoder_of
from core.encoding.cache import CachedEncoder, EmbeddingCache
from core.encoding.registry import Encoder
from core.multilabel.head import MultiLabelHead
from core.retrieval.factory import Anchors, PredictorFactory
from core.retrieval.predictor import TextEncoder
from storage.db import Database
from storage.projects import get_project
from storage.tables import ModelVersion
from storage.versions import active_version


class FactoryBuilder:
    def __init__(self, db: Database, cache: EmbeddingCache, models: Models, memo: EvalMemo) -> None:
        self.db = db
        self.cache = cache
        self.models = models
        # the evaluations of the factories it builds, kept (app.serving.eval_memo)
        self.memo = memo

    def active_version(self, project_id: int) -> tuple[ModelVersion | None, str]:
        """The project's active model version (None = frozen base) and its base encoder name."""
        with self.db.session() as s:
            return active_version(s, project_id), get_project(s, project_id).base_encoder

    def active_encoder(self, project_id: int) -> tuple[Encoder, int | None]:
        """The project's active encoder (fp32) and its version id (None = frozen base)."""
        mv, base = self.active_version(project_id)
        return self.models.encoder_for_version(mv, base), (mv.id if mv is not None else None)

    def predictor_factory(
        self,
        project_id: int,
        encoder: TextEncoder,
        settings: ProjectSettings,
        *,
        head: MultiLabelHead | None = None,
    ) -> PredictorFactory:
        """The one factory of the project's Predictors in ``encoder``'s space: its anchors as
        its ``settings`` set them (encoded through the embedding cache by ``encoder``'s anchor
        encoder, :func:`core.encoding.anchor_encoder.anchor_encoder_of`), its context encoding,
        the multi-label ``head`` of the version, the default ``k`` and rule."""
        with self.db.session() as s:
            texts, weight = project_anchors(s, project_id, settings)
        anchors = None
        if weight and texts:
            by = cast(CachedEncoder, anchor_encoder_of(encoder))
            anchors = Anchors(texts, weight, self.cache.encode(by, list(texts.values())))
        return PredictorFactory(
            encoder,
            anchors=anchors,
            head=head,
            use_context=settings.encode_context,
        )

    def version_factory(
        self,
        project_id: int,
        mv: ModelVersion | None,
        base: str,
        settings: ProjectSettings,
        *,
        served: bool = False,
    ) -> PredictorFactory:
        """:meth:`predictor_factory` of a model version (None: the frozen ``base``) with its
        multi-label head, in its fp32 encoder's space or, ``served``, in the
        space that serves it under the project's ``settings``
        (:meth:`app.serving.models.Models.serving_encoder`): a version's recorded and live
        evaluations and its map are what it answers."""
        models = self.models
        serving = models.serving_encoder(mv, base, settings) if served else None
        return self.predictor_factory(
            project_id,
            serving if serving is not None else models.encoder_for_version(mv, base),
            settings,
            head=models.version_head(mv),
        )
