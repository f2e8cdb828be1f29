"""A project's live pool: :class:`ProjectPool` (its :class:`Predictor` over the labelled `train`
rows, in the active version's space) and :func:`sync`, how it follows the database.

A pool follows the database: before each use :meth:`app.serving.live.LivePools.pool` compares one
stamp of the project (:func:`storage.pool_state.pool_stamp`) and, when it moved, :func:`sync`
applies only the difference (new, changed, removed examples; new intents, descriptions,
settings), so a label written by this or any other process counts in the very next prediction,
without a rebuild or a retrain.

A project may encode each utterance after the turn before it (its context; the ``encode_context``
setting): the pool, the queries, the calibration and a retrain then all see
:func:`core.encoding.previous_turn.with_context`, through :meth:`ProjectPool.text_of`.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from app.project_settings import ProjectSettings
from app.serving.eval_memo import JsonMemo, digest, source_hash
from app.serving.oos_correction import VersionCorrection
from core.encoding.anchor_encoder import anchor_encoder_of
from core.encoding.cache import CachedEncoder, EmbeddingCache
from core.encoding.previous_turn import with_context
from core.evaluation.data import EvalData
from core.evaluation.oos import (
    OUT_OF_SCOPE,
    Calibration,
    calibrate_predictor,
    in_scope_labels,
)
from core.retrieval.anchors import anchor_texts
from core.retrieval.knn import KnnIndex
from core.retrieval.knn_threshold import calibrate_knn_threshold
from core.retrieval.predictor import Predictor
from storage.db import Database
from storage.pool_state import pool_revision
from storage.projects import intents_by_name
from storage.utterances import UtteranceRow, labelled_pool

logger = logging.getLogger(__name__)

# Pools up to this size recalibrate on every change; bigger ones once this share has changed.
RECALIBRATE_ALWAYS = 2000
RECALIBRATE_SHARE = 0.01


def project_anchors(
    s: Any, project_id: int, settings: ProjectSettings
) -> tuple[dict[str, str], float]:
    """The project's anchors (intent -> its description or humanised name; the reserved
    out-of-scope label has none) and their weight; no anchors while the weight is 0."""
    weight = settings.anchor_weight
    if not weight:
        return {}, 0.0
    intents = intents_by_name(s, project_id)
    return anchors_of({n: i.description for n, i in intents.items()}, weight), weight


def anchors_of(intents: dict[str, str], weight: float) -> dict[str, str]:
    """The anchor texts of ``intents`` (name -> description) at ``weight`` (0: none)."""
    names = [n for n in intents if n != OUT_OF_SCOPE]
    return anchor_texts(names, {n: intents[n] for n in names}) if weight else {}


class HasContext(Protocol):
    """A row with a text and the turn before it (``""``: none)."""

    @property
    def text(self) -> str: ...

    @property
    def context(self) -> str: ...


@dataclass
class ProjectPool:
    """A project's :class:`Predictor` over its labelled `train` pool, in the active version's
    space (with that version's multi-label head, if it has one), and the revision it is at."""

    project_id: int
    model_version_id: int | None
    predictor: Predictor
    revision: tuple[int, int, int] = (-1, -1, -1)
    items: dict[int, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # examples labelled out of scope (never in the index: they calibrate its thresholds)
    out_of_scope: dict[int, str] = field(default_factory=dict)
    target_recall: float | None = None
    anchors: tuple[float, dict[str, str]] = (0.0, {})  # the weight and texts in the index
    calibration: Calibration | None = None
    uncalibrated: int = 0  # examples changed since the thresholds were calibrated
    use_context: bool = False  # the project's encode_context when the pool was built
    # the project's settings as of its stamp (read with its row when the stamp last moved)
    settings: ProjectSettings = field(default_factory=ProjectSettings)
    # every intent of the project (name -> description, "" for none), as of the last sync
    intents: dict[str, str] = field(default_factory=dict)
    # storage.pool_state.pool_stamp when the pool was last brought up to date
    stamp: tuple[int, ...] = ()
    # a multi-label pool whose version has no head gets one fitted on its rows (app.serving.pool_heads)
    fits_head: bool = False
    head_data: EvalData | None = None  # the rows its fitted head learnt from
    # thresholds calibrated once (later ones may be computed in the background: sync's defer)
    calibrated: bool = False
    calibration_due: bool = False  # rows changed since: a new calibration is on its way
    # the serving version's held-out correction, applied by every calibration of this pool
    # (app.serving.oos_correction: None while the pool's own scores calibrate)
    correction: VersionCorrection | None = None
    # what serves it (app.serving.models.Models.serving_key): a pool whose key is not the
    # project's any more is replaced by one built in the background (issue 71 item 5)
    key: str = ""

    def text_of(self, row: HasContext) -> str:
        """What the encoder sees for a row: its text, after its context when the project
        encodes context (the same for examples, queries and calibration)."""
        return with_context(row.text, row.context) if self.use_context else row.text

    @property
    def encoder(self) -> CachedEncoder:
        """The encoder that serves the pool and its queries (fp32, or the version's int8)."""
        return cast(CachedEncoder, self.predictor.encoder)

    @property
    def index(self) -> KnnIndex:
        return self.predictor.index


def sync(
    pool: ProjectPool,
    db: Database,
    cache: EmbeddingCache,
    settings: ProjectSettings,
    *,
    defer: Callable[[], None] | None = None,
    correction: VersionCorrection | None = None,
) -> None:
    """Bring ``pool`` up to the database and the project's ``settings`` (read with the
    project's row by its caller, :meth:`app.serving.live.LivePools.pool`): its intents and
    anchors, the labelled rows that changed (:func:`_apply`), and its thresholds when enough
    changed (:func:`_calibrate`).
    ``defer``: a pool calibrated before asks for its new calibration with it (done in the
    background, :func:`calibrate_snapshot`; its last thresholds serve meanwhile) instead of
    calibrating now, so a label never waits for it. ``correction``: the serving version's
    (:func:`app.serving.oos_correction.version_correction`); a new one calibrates now."""
    with db.session() as s:
        revision = pool_revision(s, pool.project_id)
        target = settings.oos_target_recall
        found = intents_by_name(s, pool.project_id)
        pool.intents = {name: i.description or "" for name, i in sorted(found.items())}
        weight = settings.anchor_weight
        texts = anchors_of(pool.intents, weight)
        weight = weight if texts else 0.0
        if (weight, texts) != pool.anchors:
            by = cast(CachedEncoder, anchor_encoder_of(pool.predictor.encoder))
            vectors = cache.encode(by, list(texts.values())) if texts else None
            pool.predictor.set_anchors(texts, weight, vectors=vectors)
            pool.anchors = (weight, texts)
        corrected = correction != pool.correction
        if revision == pool.revision and target == pool.target_recall and not corrected:
            return
        rows = labelled_pool(s, pool.project_id) if revision != pool.revision else None
    intents = pool.index.intents
    if rows is not None:
        pool.uncalibrated += _apply(pool, rows, cache)
        pool.revision = revision
    pool.correction = correction
    _recalibrate(pool, cache, intents, target, None if corrected else defer, force=corrected)


def _recalibrate(
    pool: ProjectPool,
    cache: EmbeddingCache,
    intents: set[str],
    target: float | None,
    defer: Callable[[], None] | None,
    *,
    force: bool = False,
) -> None:
    """Calibrate ``pool`` again when enough changed since (its intents were ``intents``): a big
    pool once 1 % of it changed (0.1 s of CPU for BANKING77's 770), at once when the trade-off
    or the set of intents changed (or ``force``: its version's correction did); with ``defer``,
    in the background (see :func:`sync`), except after a new trade-off (the setting's page shows
    its thresholds)."""
    if (
        force
        or target != pool.target_recall
        or pool.index.intents != intents
        or pool.uncalibrated >= RECALIBRATE_SHARE * len(pool.items)
        or len(pool.items) <= RECALIBRATE_ALWAYS
    ):
        chosen = target != pool.target_recall  # a setting the person is looking at: now
        pool.target_recall = target
        pool.uncalibrated = 0
        if defer is not None and pool.calibrated and not chosen:
            pool.calibration_due = True
            defer()
        else:
            _calibrate(pool, cache)


def apply_rows(
    pool: ProjectPool,
    rows: Mapping[int, UtteranceRow | None],
    cache: EmbeddingCache,
    defer: Callable[[], None] | None = None,
) -> None:
    """Bring ``pool`` over the rows a change just wrote (id -> the row now; None: deleted),
    read in that change's own transaction, as :func:`sync` would after reading them back: a
    labelled `train` row joins (or replaces its old self in) the pool, any other leaves it."""
    intents = pool.index.intents
    pooled = {i: r for i, r in rows.items() if r is not None and r.split == "train" and r.labels}
    gone = [i for i in rows if i not in pooled and i in pool.items]
    wanted = {i: (pool.text_of(r), in_scope_labels(r.labels)) for i, r in pooled.items()}
    changed = _reindex(pool, cache, wanted, gone)
    moved = 0
    for i in rows:
        oos = pooled[i] if i in pooled and OUT_OF_SCOPE in pooled[i].labels else None
        text = pool.text_of(oos) if oos is not None else None
        if pool.out_of_scope.get(i) != text:
            moved += 1
            if text is None:
                pool.out_of_scope.pop(i, None)
            else:
                pool.out_of_scope[i] = text
    for i in gone:
        pool.items.pop(i, None)
    pool.items.update(wanted)
    pool.uncalibrated += len(gone) + len(changed) + moved
    _recalibrate(pool, cache, intents, pool.target_recall, defer)


def _reindex(
    pool: ProjectPool,
    cache: EmbeddingCache,
    wanted: dict[int, tuple[str, tuple[str, ...]]],
    gone: list[int],
) -> list[int]:
    """The pool's index without ``gone`` and with each of ``wanted`` (id -> text as encoded,
    intents) that is not in the pool as it is, encoded once; returns those (the changed)."""
    changed = [i for i, item in wanted.items() if pool.items.get(i) != item]
    if gone:
        pool.index.remove(gone)
    if changed:
        texts = [wanted[i][0] for i in changed]
        vectors = cache.encode(pool.encoder, texts)
        pool.index.add(changed, vectors, texts, [wanted[i][1] for i in changed])
    return changed


def _apply(pool: ProjectPool, rows: list[UtteranceRow], cache: EmbeddingCache) -> int:
    """Bring the index to ``rows``: only what changed is re-added or removed."""
    wanted = {r.id: (pool.text_of(r), in_scope_labels(r.labels)) for r in rows}
    out_of_scope = {r.id: pool.text_of(r) for r in rows if OUT_OF_SCOPE in r.labels}
    moved = len(set(out_of_scope.items()) ^ set(pool.out_of_scope.items()))
    gone = [i for i in pool.items if i not in wanted]
    changed = _reindex(pool, cache, wanted, gone)
    pool.items = wanted
    pool.out_of_scope = out_of_scope
    if gone or changed:
        logger.debug("pool %s: %d changed, %d removed", pool.project_id, len(changed), len(gone))
    return len(gone) + len(changed) + moved


def _calibrate(pool: ProjectPool, cache: EmbeddingCache) -> None:
    """The out-of-scope thresholds of the pool, calibrated on the scores its own predictor
    serves (anchors, rule, ``k``: :func:`core.evaluation.oos.calibrate_predictor`), out of
    fold over the labelled train pool; the test split is never used. A multi-label pool
    without a head gets its decision threshold the same way
    (:func:`core.retrieval.knn_threshold.calibrate_knn_threshold`)."""
    predictor = pool.predictor
    pool.calibrated, pool.calibration_due = True, False
    predictor.thresholds = {}
    if predictor.multi_label and predictor.head is None:
        # no head yet: the k-NN decision's own threshold, calibrated out of fold the same way
        pool.calibration = None
        threshold = calibrate_knn_threshold(predictor)
        predictor.thresholds = {"default": threshold} if threshold is not None else {}
        return
    if pool.target_recall is None or predictor.multi_label or len(pool.index) == 0:
        pool.calibration = None
        return
    oos = list(pool.out_of_scope.values())
    memo = JsonMemo(cache.root / "calibrations") if cache.root is not None else None
    key = _calibration_key(pool, oos)
    known = memo.read(key) if memo is not None else None  # the same pool, calibrated before
    if known is not None:
        pool.calibration = Calibration.from_dict(known)
    else:
        pool.calibration = calibrate_predictor(
            predictor,
            out_of_scope=cache.encode(pool.encoder, oos) if oos else None,
            target_recall=pool.target_recall,
            correction=pool.correction.for_items(pool.items) if pool.correction else None,
        )
        if memo is not None:
            memo.write(key, pool.calibration.to_dict())
    predictor.thresholds = dict(pool.calibration.thresholds)


def calibrate_snapshot(pool: ProjectPool, cache: EmbeddingCache) -> bool:
    """Calibrate ``pool`` again off its lock: a copy of its examples and settings is taken under
    the lock (milliseconds), calibrated outside it (what takes the time), and the thresholds are
    swapped in unless its rows changed meanwhile (then a newer calibration is due anyway).
    Returns whether they were swapped in."""
    with pool.lock:
        if not pool.calibration_due:
            return False
        every, _, _, _ = pool.index.examples()
        copy = dataclasses.replace(
            pool,
            predictor=pool.predictor.fold(every),
            lock=threading.Lock(),
            items=dict(pool.items),
            out_of_scope=dict(pool.out_of_scope),
        )
        copy.predictor.head = pool.predictor.head
        copy.predictor._multi_label = pool.predictor._multi_label
        revision = pool.revision
    _calibrate(copy, cache)
    with pool.lock:
        if pool.revision != revision or not pool.calibration_due:
            return False
        pool.calibration = copy.calibration
        pool.predictor.thresholds = dict(copy.predictor.thresholds)
        pool.calibration_due = False
        return True


# What a pool's calibration is computed by: a change to any of them calibrates again.
_CALIBRATION_CODE = (
    "app/serving/pools.py",
    "app/serving/oos_correction.py",
    "core/evaluation/calibration.py",
    "core/evaluation/oos.py",
    "core/folds.py",
    "core/retrieval/knn.py",
    "core/retrieval/rule.py",
    "core/retrieval/scores.py",
    "core/retrieval/store.py",
    "core/retrieval/predictor.py",
)


def _calibration_key(pool: ProjectPool, oos: list[str]) -> str | None:
    """Everything :func:`calibrate_predictor` reads of a pool: its examples (by id, as its
    folds are made), their space (the encoder's fingerprint, the anchors' encoder's), the
    anchors, ``k``, the rule, the target, the examples labelled out of scope and the version's
    correction with the examples it applies to."""
    predictor = pool.predictor
    fingerprint = getattr(pool.encoder, "fingerprint", None)
    if not fingerprint:
        return None
    return digest(
        {
            "code": source_hash(_CALIBRATION_CODE),
            "encoder": str(fingerprint),
            "anchor_encoder": str(getattr(anchor_encoder_of(pool.encoder), "fingerprint", "")),
            "anchors": [pool.anchors[0], sorted(pool.anchors[1].items())],
            "k": predictor.k,
            "rule": predictor.rule,
            "target": pool.target_recall,
            "examples": sorted([i, t, list(labels)] for i, (t, labels) in pool.items.items()),
            "out_of_scope": sorted(oos),
            "correction": pool.correction.for_items(pool.items).key() if pool.correction else None,
        }
    )
