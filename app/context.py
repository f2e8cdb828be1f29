"""The process-wide resources the services share: the database, artifact files, loaded encoders,
the embedding cache, and one live k-NN pool per project (:mod:`app.pools`: how a pool follows
the database and what it encodes).

Prediction calls pass :attr:`AppContext.admission` (per-call, per-user and queue limits, see
:mod:`app.admission`) and then share the encoders in turns (:mod:`core.encoding.fair_share`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol, cast

from app.admission import Admission, Limits
from app.config import Settings
from app.pool_heads import HeadFitter, HeadStore, head_key
from app.pools import ProjectPool, apply_rows, calibrate_snapshot, project_anchors, sync
from app.project_settings import as_encoded, encodes_context
from app.serving.int8 import INT8_DIR, load_int8, serves_int8
from app.uploads import Uploads
from app.vectors import open_cache
from core.bundle.onnx_encoder import MODEL_FILE, OnnxEncoder
from core.encoding.cache import CachedEncoder
from core.encoding.registry import Encoder, load_encoder
from core.evaluation.data import EvalData
from core.evaluation.version_metrics import VersionMetrics
from core.multilabel.head import HEAD_DIR, Cancelled, MultiLabelHead, load_head
from core.multilabel.rule import is_multilabel
from core.multilabel.tuning import fit_head
from core.retrieval.factory import Anchors, PredictorFactory
from core.retrieval.predictor import TextEncoder
from storage.artifacts import ArtifactStore
from storage.db import Database
from storage.pool_state import pool_stamp
from storage.projects import get_project
from storage.tables import ModelVersion
from storage.utterances import UtteranceRow, list_utterances
from storage.versions import active_version

logger = logging.getLogger(__name__)

# A pool's new calibration starts once its rows stopped changing for this long (an annotator's
# labels in a burst share one; 0.1 s of CPU for BANKING77's 770 examples).
CALIBRATION_SETTLE_S = 0.3


class JobQueue(Protocol):
    """The training queue as the request side sees it (:func:`app.worker.queue_for`): calling it
    queues a job id; :meth:`pending` gives the ids whose message it holds, not yet taken."""

    def __call__(self, job_id: int) -> None: ...

    def pending(self) -> set[int]: ...


class AppContext:
    def __init__(
        self, settings: Settings, *, database: Database | None = None, limits: Limits | None = None
    ) -> None:
        self.settings = settings
        self.admission = Admission(limits)
        self.db = database or Database(settings.database_url, max_intents=settings.max_intents)
        self.artifacts: ArtifactStore = settings.open_artifacts()
        self.cache = open_cache(settings, self.artifacts)
        self.device = settings.device
        self._pools: dict[int, ProjectPool] = {}
        self._encoders: dict[str, Encoder] = {}
        self._int8: dict[str, OnnxEncoder | None] = {}
        self._lock = threading.Lock()
        # Queues a training job id; set by the entry point that runs a queue (see app.worker).
        self.enqueue: JobQueue | None = None
        # fits the heads of multi-label pools whose version has none (app.pool_heads)
        self.heads = HeadFitter(self._fit_pool_head)
        self.kept_heads = HeadStore(self.cache.root / "heads" if self.cache.root else None)
        # calibrates a pool again once its rows changed, off the path of the label that changed
        # them (its last thresholds serve meanwhile: app.pools.calibrate_snapshot)
        self.calibrations = HeadFitter(self._calibrate_pool, delay=CALIBRATION_SETTLE_S)
        # files uploaded through the UI and not used up yet (app.uploads.UploadGate records them)
        self.uploads = Uploads()

    def base_encoder(self, name: str = "minilm") -> Encoder:
        return load_encoder(name, device=self.device)

    def encoder_for_version(self, mv: ModelVersion | None, base: str = "minilm") -> Encoder:
        """The encoder of a model version (its artifact), or the frozen base when ``mv`` is None."""
        if mv is None or not mv.artifact_path:
            return self.base_encoder(mv.base_encoder if mv is not None else base)
        key = f"mv:{mv.id}:{mv.artifact_sha256}"
        with self._lock:
            if key not in self._encoders:
                from core.training import load_trained

                path: Path = self.artifacts.path(mv.artifact_path)
                self._encoders[key] = load_trained(path, device=self.device)
            return self._encoders[key]

    def label_encoder_for_version(self, mv: ModelVersion | None) -> Encoder | None:
        """A version's separate label encoder, which embeds its anchors (None: it has none)."""
        if mv is None or not mv.artifact_path:
            return None
        if (mv.config or {}).get("label_encoder") != "separate":
            return None
        key = f"label:{mv.id}:{mv.artifact_sha256}"
        with self._lock:
            if key not in self._encoders:
                from core.training import load_label_encoder

                found = load_label_encoder(self.artifacts.path(mv.artifact_path), self.device)
                self._encoders[key] = cast(Encoder, found)  # separate: never None
            return self._encoders[key]

    def serving_encoder(
        self, mv: ModelVersion | None, base: str, settings: dict[str, object] | None
    ) -> CachedEncoder:
        """The encoder a project's live pool serves with: the version's int8 ONNX copy when it
        passed parity and the project allows it (:func:`app.serving.int8.serves_int8`), else
        the fp32 encoder (also when the int8 copy is missing or will not load)."""
        if (
            mv is None
            or not mv.artifact_path
            or not serves_int8(VersionMetrics.from_dict(mv.metrics), settings)
        ):
            return self.encoder_for_version(mv, base)
        folder = self.artifacts.path(mv.artifact_path) / INT8_DIR
        if not (folder / MODEL_FILE).is_file():  # removed since: serve fp32
            return self.encoder_for_version(mv, base)
        key = f"int8:{mv.id}:{mv.artifact_sha256}"
        with self._lock:
            if key not in self._int8:
                try:
                    self._int8[key] = load_int8(folder)
                except Exception as exc:  # a broken copy, no onnxruntime: serve fp32
                    logger.warning("int8 encoder of version %s unusable: %s", mv.id, exc)
                    self._int8[key] = None
            int8 = self._int8[key]
        return int8 if int8 is not None else self.encoder_for_version(mv, base)

    def version_head(self, mv: ModelVersion | None) -> MultiLabelHead | None:
        """The multi-label head stored in a model version (None when it has none)."""
        if mv is None or not mv.artifact_path:
            return None
        folder = self.artifacts.path(mv.artifact_path) / HEAD_DIR
        return load_head(folder) if folder.is_dir() else None

    def head_data(self, project_id: int) -> EvalData | None:
        """The rows a head is fitted on in a space whose version has none: the project's train
        rows as it encodes them, those with no intent teaching "none of these" (what a retrain's
        evaluation fits the frozen base's head on); None for a single-label project."""
        with self.db.session() as s:
            settings = get_project(s, project_id).settings
            rows = as_encoded(list_utterances(s, project_id, split="train"), settings)
        data = EvalData.from_rows(rows, with_unlabelled=True)
        return data if is_multilabel(data.train_labels) else None

    def space_head(
        self,
        project_id: int,
        encoder: TextEncoder,
        data: EvalData | None = None,
        should_cancel: Callable[[], bool] | None = None,
    ) -> MultiLabelHead | None:
        """The multi-label head of ``encoder``'s space when its version has none: fitted with
        the default options on :meth:`head_data` (``data``, when already read), as a retrain's
        evaluation fits one (:func:`core.multilabel.tuning.fit_head`), or the same fit kept
        on disk (:class:`app.pool_heads.HeadStore`); None when single-label."""
        data = data if data is not None else self.head_data(project_id)
        if data is None:
            return None
        key = head_key(encoder, data)
        kept = self.kept_heads.get(key)
        if kept is not None:
            return kept
        vectors = self.cache.encode(cast(CachedEncoder, encoder), data.train_texts)
        head = fit_head(vectors, data.train_labels, should_cancel=should_cancel)
        self.kept_heads.put(key, head)
        return head

    def active_version(self, project_id: int) -> tuple[ModelVersion | None, str]:
        """The project's active model version (None = frozen base) and its base encoder name."""
        with self.db.session() as s:
            return active_version(s, project_id), get_project(s, project_id).base_encoder

    def active_encoder(self, project_id: int) -> tuple[Encoder, int | None]:
        mv, base = self.active_version(project_id)
        return self.encoder_for_version(mv, base), (mv.id if mv is not None else None)

    # --- predictors ------------------------------------------------------------------------

    def predictor_factory(
        self,
        project_id: int,
        encoder: TextEncoder,
        *,
        label_encoder: TextEncoder | None = None,
        head: MultiLabelHead | None = None,
    ) -> PredictorFactory:
        """The one factory of the project's Predictors in ``encoder``'s space
        (:class:`core.retrieval.factory.PredictorFactory`): its anchors as the project sets them
        (encoded through the embedding cache by ``label_encoder``, else ``encoder``), its context
        encoding, the multi-label ``head`` of the version, the default ``k`` and rule. The live
        pool, a version's evaluation, the Map, the drill-down and a retrain's evaluation all
        build their Predictors from it."""
        with self.db.session() as s:
            settings = dict(get_project(s, project_id).settings or {})
            texts, weight = project_anchors(s, project_id, settings)
        anchors = None
        if weight and texts:
            by = cast(CachedEncoder, label_encoder if label_encoder is not None else encoder)
            anchors = Anchors(texts, weight, self.cache.encode(by, list(texts.values())))
        return PredictorFactory(
            encoder,
            anchors=anchors,
            head=head,
            label_encoder=label_encoder,
            use_context=encodes_context(settings),
        )

    def version_factory(
        self,
        project_id: int,
        mv: ModelVersion | None,
        base: str = "minilm",
        settings: dict[str, object] | None = None,
        *,
        served: bool = False,
    ) -> PredictorFactory:
        """:meth:`predictor_factory` of a model version (None: the frozen ``base``) with its
        label encoder and multi-label head, in its fp32 encoder's space or, ``served``, in the
        space that serves it under the project's ``settings`` (:meth:`serving_encoder`): a
        version's recorded and live evaluations and its map are what it answers."""
        serving = self.serving_encoder(mv, base, settings) if served else None
        return self.predictor_factory(
            project_id,
            serving if serving is not None else self.encoder_for_version(mv, base),
            label_encoder=self.label_encoder_for_version(mv),
            head=self.version_head(mv),
        )

    # --- pools -----------------------------------------------------------------------------

    def pool(self, project_id: int, stamp: tuple[int, ...] | None = None) -> ProjectPool:
        """The project's up-to-date labelled pool (applies only what changed since last use).
        One statement when nothing changed (:func:`storage.pool_state.pool_stamp`): the hot path
        of every prediction and every labelling card; none when the caller read the ``stamp``
        already (with the project: :attr:`app.access.ProjectHandle.stamp`)."""
        if stamp is None:
            with self.db.reading() as c:
                stamp = pool_stamp(c, project_id)
        return self._pool_at(project_id, stamp)

    def pool_after(
        self,
        project_id: int,
        before: tuple[int, ...],
        after: tuple[int, ...],
        rows: Mapping[int, UtteranceRow | None],
    ) -> None:
        """Bring the project's live pool over a change this process just wrote: the pool's
        stamp ``before`` and ``after`` it, and the ``rows`` it wrote as they are now (None:
        deleted), all read in the change's own transaction (which held the write lock, so
        nothing else came between). When the pool was up to date before it and the change
        touched only rows (not the project or its intents), the rows are applied as they are
        (:func:`app.pools.apply_rows`), without reading anything; else the pool's next use syncs
        as usual."""
        rows_only = before[:2] == after[:2] and before[5:] == after[5:]
        with self._lock:
            pool = self._pools.get(project_id)
        if pool is None or not rows_only:
            return
        with pool.lock:
            if pool.stamp != before:
                return
            apply_rows(pool, rows, self.cache, lambda: self.calibrations.request(project_id))
            pool.revision = (after[2], after[3], after[4])
            pool.stamp = after
            if pool.fits_head and (pool.predictor.multi_label or pool.predictor.head is not None):
                self.heads.request(project_id)

    def _pool_at(self, project_id: int, stamp: tuple[int, ...]) -> ProjectPool:
        with self._lock:
            pool = self._pools.get(project_id)
        if pool is not None and pool.stamp == stamp:
            with pool.lock:  # a sync under way (another thread's newer change) ends first
                return pool
        # something changed: read the stamp before syncing, so a change during the sync is
        # picked up by the next call
        pool = self._refresh(project_id)
        pool.stamp = stamp
        return pool

    def _refresh(self, project_id: int) -> ProjectPool:
        with self.db.session() as s:
            mv, project = active_version(s, project_id), get_project(s, project_id)
            base, settings = project.base_encoder, dict(project.settings or {})
        encoder = self.serving_encoder(mv, base, settings)
        label = self.label_encoder_for_version(mv)  # before the lock: it takes the lock
        mv_id = mv.id if mv is not None else None
        use_context = encodes_context(settings)
        with self._lock:
            pool = self._pools.get(project_id)
            fresh = (
                pool is None
                or pool.model_version_id != mv_id
                or pool.encoder is not encoder
                or pool.use_context != use_context
            )
        if fresh:
            head = self.version_head(mv)
            data = self.head_data(project_id) if head is None else None
            kept = self.kept_heads.get(head_key(encoder, data)) if data is not None else None
            factory = self.predictor_factory(project_id, encoder, label_encoder=label, head=head)
            with self._lock:
                pool = ProjectPool(project_id, mv_id, factory.empty(), use_context=use_context)
                pool.fits_head = head is None
                if kept is not None:  # the head this space had: served from the start
                    pool.predictor.head, pool.head_data = kept, data
                a = factory.anchors
                pool.anchors = (a.weight, dict(a.texts)) if a is not None else (0.0, {})
                self._pools[project_id] = pool
        assert pool is not None
        with pool.lock:
            sync(pool, self.db, self.cache, defer=lambda: self.calibrations.request(project_id))
            if pool.fits_head and (pool.predictor.multi_label or pool.predictor.head is not None):
                self.heads.request(project_id)
        return pool

    def _calibrate_pool(self, project_id: int) -> None:
        """Calibrate the project's live pool again (:class:`HeadFitter` calls it in the
        background after its rows changed)."""
        with self._lock:
            pool = self._pools.get(project_id)
        if pool is not None:
            calibrate_snapshot(pool, self.cache)

    def _fit_pool_head(self, project_id: int) -> None:
        """Fit the head of the project's live pool (:class:`HeadFitter` calls it in the
        background) and swap it in, unless the pool was replaced meanwhile; skipped when the rows
        are those of the head it has."""
        with self._lock:
            pool = self._pools.get(project_id)
        if pool is None or not pool.fits_head:
            return
        data = self.head_data(project_id)
        if data is not None and data == pool.head_data and pool.predictor.head is not None:
            return
        try:
            head = (
                self.space_head(project_id, pool.encoder, data, lambda: self.heads.closed)
                if data is not None
                else None
            )
        except Cancelled:  # the app is closing
            return
        with self._lock:
            current = self._pools.get(project_id) is pool
        if current:
            with pool.lock:
                pool.predictor.head, pool.head_data = head, data

    def warm_up(self) -> None:
        """Load the encoders and build the pools of every project (call in a background thread at
        start-up, so the first request does not pay for it)."""
        from storage.projects import list_projects

        with self.db.session() as s:
            ids = [p.id for p in list_projects(s)]
        for pid in ids:
            try:
                self.pool(pid)
            except Exception:  # a broken project must not stop the others from warming
                logger.exception("warm-up of project %s failed", pid)

    def forget_pool(self, project_id: int) -> None:
        with self._lock:
            self._pools.pop(project_id, None)

    def close(self) -> None:
        self.calibrations.close()
        self.heads.close()
        self.db.dispose()
