"""The live pools: one labelled k-NN pool per project (:class:`app.serving.pools.ProjectPool`) that
follows the database, with the two background threads that keep it sharp (a pool's calibration
after its rows changed, and the multi-label head of a space whose version has none), and the
start-up warm-up that builds every pool before the first request; and the admission of
prediction calls to them (:mod:`app.serving.admission`).

Guarantees: :meth:`LivePools.pool` answers with the pool as of the database's pool stamp (one
statement when nothing changed; a caller that read the stamp passes it); a change this process
wrote is applied from its own rows (:meth:`LivePools.pool_after`), never read back; a label never
waits for a calibration or a head fit (they run in the background, after a card a person waits
for, and swap in). Locks: one for the table of pools (ms), one per pool held while it syncs or
takes rows. Used by the server and the CLI's ``predict``; the worker evaluates from factories."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from typing import cast

from app.project_settings import ProjectSettings, as_encoded, settings_of
from app.serving.admission import Admission
from app.serving.factories import FactoryBuilder
from app.serving.models import Models
from app.serving.oos_correction import VersionCorrection, version_correction
from app.serving.pool_heads import HeadFitter, HeadStore, head_key
from app.serving.pool_switch import PoolSwitch
from app.serving.pools import ProjectPool, apply_rows, calibrate_snapshot, sync
from app.serving.readiness import Readiness
from core.encoding.cache import CachedEncoder, EmbeddingCache
from core.encoding.exit_gate import Exiting
from core.errors import logged
from core.evaluation.data import EvalData
from core.multilabel.head import Cancelled, MultiLabelHead
from core.multilabel.rule import is_multilabel
from core.multilabel.tuning import fit_head
from core.retrieval.predictor import TextEncoder
from storage.db import Database
from storage.pool_state import pool_stamp
from storage.projects import get_project
from storage.tables import ModelVersion
from storage.utterances import UtteranceRow, list_utterances
from storage.versions import active_version

logger = logging.getLogger(__name__)

# A pool's calibration starts once its rows settled this long (a burst of labels shares one), no
# sooner than REST x the last one's duration after it (after every label: 2x the keys' CPU).
CALIBRATION_SETTLE_S, CALIBRATION_REST = 0.3, 4.0


class LivePools:
    auto_retrain = True  # the deployment's Settings.auto_retrain, which a project's switch obeys

    def __init__(
        self,
        db: Database,
        cache: EmbeddingCache,
        models: Models,
        factories: FactoryBuilder,
        admission: Admission | None = None,
    ) -> None:
        self.db = db
        # who may ask the pools for predictions now: per call, per user, in all (app.serving.admission)
        self.admission = admission if admission is not None else Admission()
        self.cache = cache
        self.models = models
        self.factories = factories
        self._pools: dict[int, ProjectPool] = {}
        self._lock = threading.Lock()
        # fits the heads of multi-label pools whose version has none (app.serving.pool_heads)
        self.heads = HeadFitter(self._fit_pool_head)
        self.kept_heads = HeadStore(cache.root / "heads" if cache.root else None)
        # calibrates a changed pool off its labels' path (app.serving.pools.calibrate_snapshot)
        self.calibrations = HeadFitter(
            self._calibrate_pool, delay=CALIBRATION_SETTLE_S, rest=CALIBRATION_REST
        )
        # per project: the serving version's held-out correction, by what it was read from
        self._corrections: dict[int, tuple[str, VersionCorrection | None]] = {}
        # per project: the last pool whose space held every queue candidate's vector: it orders
        # the queue while a newer version's space lacks them (app.services.queue.queue_order)
        self.ordered: dict[int, ProjectPool] = {}
        # the server builds a new version's pool while the one before it answers (issue 71)
        self.switch_in_background = False
        self._wanted: dict[int, str] = {}  # per project: the serving key it should answer with
        self.switches = PoolSwitch(self)

    # --- the heads of spaces whose version has none ----------------------------------------

    def head_data(self, project_id: int, settings: ProjectSettings) -> EvalData | None:
        """The rows a head is fitted on in a space whose version has none: the project's train
        rows as its ``settings`` encode them, those with no intent teaching "none of these" (what
        a retrain's evaluation fits the frozen base's head on); None for a single-label project."""
        with self.db.session() as s:
            rows = as_encoded(list_utterances(s, project_id, split="train"), settings)
        data = EvalData.from_rows(rows, with_unlabelled=True)
        return data if is_multilabel(data.train_labels) else None

    def space_head(
        self,
        project_id: int,
        encoder: TextEncoder,
        settings: ProjectSettings,
        data: EvalData | None = None,
        should_cancel: Callable[[], bool] | None = None,
    ) -> MultiLabelHead | None:
        """The multi-label head of ``encoder``'s space when its version has none: fitted with
        the default options on :meth:`head_data` (``data``, when already read), as a retrain's
        evaluation fits one (:func:`core.multilabel.tuning.fit_head`), or the same fit kept
        on disk (:class:`app.serving.pool_heads.HeadStore`); None when single-label."""
        data = data if data is not None else self.head_data(project_id, settings)
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
        (:func:`app.serving.pools.apply_rows`), without reading anything; else the pool's next use syncs
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
        # the project's row, read once (after the stamp): its settings serve the whole refresh
        with self.db.session() as s:
            project = get_project(s, project_id)  # held: active_version reads it from the session
            mv = active_version(s, project_id)
            base, settings = project.base_encoder, settings_of(project)
        key = self.models.serving_key(mv, base, settings)
        mv_id = mv.id if mv is not None else None
        use_context = settings.encode_context
        with self._lock:
            pool = self._pools.get(project_id)
            self._wanted[project_id] = key
        if (
            self.switch_in_background
            and pool is not None
            and pool.key != key
            and pool.use_context == use_context
        ):  # another model serves the project now: the pool before it answers meanwhile
            self.switches.start(project_id, key, mv, base, settings)
            with pool.lock:
                sync(pool, self.db, self.cache, settings, correction=pool.correction)
            return pool
        encoder = self.models.serving_encoder(mv, base, settings)
        with self._lock:
            pool = self._pools.get(project_id)
            fresh = (
                pool is None
                or pool.model_version_id != mv_id
                or pool.encoder is not encoder
                or pool.use_context != use_context
            )
        if fresh:
            made = self._new_pool(project_id, mv, encoder, settings)
            made.key = key
            with self._lock:
                pool = self._pools[project_id] = made
        assert pool is not None
        correction = self._correction(project_id, mv, settings)
        with pool.lock:
            pool.settings = settings
            sync(
                pool,
                self.db,
                self.cache,
                settings,
                defer=lambda: self.calibrations.request(project_id),
                correction=correction,
            )
            if pool.fits_head and (pool.predictor.multi_label or pool.predictor.head is not None):
                self.heads.request(project_id)
        return pool

    def switching(self, project_id: int) -> bool:
        """Whether the pool answering is not yet what serves the project (being built)."""
        with self._lock:
            pool = self._pools.get(project_id)
            wanted = self._wanted.get(project_id)
        return pool is not None and wanted is not None and pool.key != wanted

    def install(self, project_id: int, key: str, made: ProjectPool) -> bool:
        """Put ``made`` (built for ``key``) in place unless another model was asked for since."""
        with self._lock:
            if self._wanted.get(project_id) != key:
                return False
            self._pools[project_id] = made  # its stamp is synced on its next use
            return True

    def build_pool(
        self,
        project_id: int,
        key: str,
        mv: ModelVersion | None,
        base: str,
        settings: ProjectSettings,
    ) -> ProjectPool:
        """A new pool of what serves the project (``key``), its rows synced and calibrated."""
        encoder = self.models.serving_encoder(mv, base, settings)
        made = self._new_pool(project_id, mv, encoder, settings)
        made.key = key
        correction = self._correction(project_id, mv, settings)
        with made.lock:
            made.settings = settings
            sync(made, self.db, self.cache, settings, correction=correction)
        return made

    def _new_pool(
        self,
        project_id: int,
        mv: ModelVersion | None,
        encoder: CachedEncoder,
        settings: ProjectSettings,
    ) -> ProjectPool:
        """An empty pool of the project in ``encoder``'s space, with the version's head (or the
        head this space had, kept on disk) and the project's anchors."""
        head = self.models.version_head(mv)
        data = self.head_data(project_id, settings) if head is None else None
        kept = self.kept_heads.get(head_key(encoder, data)) if data is not None else None
        factory = self.factories.predictor_factory(project_id, encoder, settings, head=head)
        pool = ProjectPool(
            project_id,
            mv.id if mv is not None else None,
            factory.empty(),
            use_context=settings.encode_context,
            settings=settings,
        )
        pool.fits_head = head is None
        if kept is not None:  # the head this space had: served from the start
            pool.predictor.head, pool.head_data = kept, data
        a = factory.anchors
        pool.anchors = (a.weight, dict(a.texts)) if a is not None else (0.0, {})
        return pool

    def settled(self, project_id: int) -> ProjectPool:
        """The project's live pool with nothing left pending: a calibration its rows asked for
        is done now, and the head of a multi-label space whose version has none is fitted now
        (each swapped in as the background would), so what it answers next is what it answers
        until the project changes (a bundle of it is exported from here)."""
        pool = self.pool(project_id)
        calibrate_snapshot(pool, self.cache)
        if pool.fits_head and (pool.predictor.multi_label or pool.predictor.head is not None):
            self._fit_pool_head(project_id)
        return pool

    def pool_with(
        self, project_id: int, mv: ModelVersion | None, encoder: CachedEncoder
    ) -> ProjectPool:
        """A pool of the project for version ``mv`` (None: the frozen base) in ``encoder``'s
        space, built, synced and calibrated as :meth:`pool` builds the live one (the version's
        held-out correction applied; a multi-label space without a head gets its head now), but
        not kept: what the app would serve with that version and encoder (a bundle of another
        precision or version than the one serving)."""
        with self.db.session() as s:
            project = get_project(s, project_id)
            settings = settings_of(project)
        pool = self._new_pool(project_id, mv, encoder, settings)
        correction = version_correction(self.db, mv, settings)
        sync(pool, self.db, self.cache, settings, correction=correction)
        if pool.fits_head and pool.predictor.multi_label and pool.predictor.head is None:
            data = self.head_data(project_id, settings)
            head = self.space_head(project_id, encoder, settings, data) if data else None
            pool.predictor.head, pool.head_data = head, data
        return pool

    def _correction(
        self, project_id: int, mv: ModelVersion | None, settings: ProjectSettings
    ) -> VersionCorrection | None:
        """The serving version's held-out correction under the project's settings
        (:func:`app.serving.oos_correction.version_correction`), read again only when the
        version, its record or the setting changed (the trained rows are a dataset version's)."""
        record = (mv.metrics or {}).get("oos_calibration") if mv is not None else None
        key = json.dumps([mv.id if mv else None, record, settings.oos_calibration], sort_keys=True)
        with self._lock:
            known = self._corrections.get(project_id)
        if known is not None and known[0] == key:
            return known[1]
        found = version_correction(self.db, mv, settings)
        with self._lock:
            self._corrections[project_id] = (key, found)
        return found

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
        data = self.head_data(project_id, pool.settings)
        if data is not None and data == pool.head_data and pool.predictor.head is not None:
            return
        try:
            head = (
                self.space_head(
                    project_id, pool.encoder, pool.settings, data, lambda: self.heads.closed
                )
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

    def warm_up(self, readiness: Readiness | None = None) -> None:
        """Load the encoders and build the pools of every project (call in a background thread at
        start-up, so the first request does not pay for it); ``readiness`` is told how far it got,
        and ends it early once the server stops (and the process's exit refuses model work)."""
        from storage.projects import list_projects

        with self.db.session() as s:
            ids = [p.id for p in list_projects(s)]
        if readiness is not None:
            readiness.warming(len(ids))
        for done, pid in enumerate(ids):
            if readiness is not None and readiness.is_stopping:
                return
            try:
                self.pool(pid)
            except Exiting:  # the process is exiting (core.encoding.exit_gate)
                return
            except Exception:  # a broken project must not stop the others from warming
                logged(logger, "warm-up of project %s failed", pid)
            if readiness is not None:
                readiness.warmed(done + 1)

    def forget_pool(self, project_id: int) -> None:
        with self._lock:
            self._pools.pop(project_id, None)

    def close(self) -> None:
        """Stop the background fits (a running one is waited for)."""
        self.calibrations.close()
        self.heads.close()
