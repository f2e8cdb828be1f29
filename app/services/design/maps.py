"""The Map tab's actions: 2D maps of a project's utterances, cached on disk, computed off-request.

A map's coordinates depend only on the encoder and the utterance texts, never on labels, so a
lasso labelling does not move a single point: the cache key is (encoder fingerprint, method,
hash of the (id, text) pairs). Colours, predictions, margins and space metrics are recomputed on
every render from the live pool (cheap next to a projection).

Projections run in a background thread: :func:`get_map` returns at once with a quick PCA map
while the map asked for is being computed (the UI polls) and starts the computation when the
cached map is missing or stale; UMAP and t-SNE themselves run in a child process
(:class:`app.serving.map_store.Projector`), never holding this one's GIL. :func:`compute_map`
is the blocking form (CLI, report, tests).

Example: ``map_figure(compute_map(maps, p, method="pca"))`` (the figures are
:mod:`app.services.design.map_figures`', named here too).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import random
from typing import Any, NamedTuple, cast

import numpy as np

from app.access import ProjectHandle
from app.services.design.map_figures import compare_figure as compare_figure
from app.services.design.map_figures import cut, sample_positions
from app.services.design.map_figures import map_data as map_data
from app.services.design.map_figures import map_diff as map_diff
from app.services.design.map_figures import map_figure as map_figure
from app.services.models.versions import Version, resolve_factory
from app.serving.factories import FactoryBuilder
from app.serving.map_store import QUICK, MapStore, MapView
from core.encoding.cache import CachedEncoder, EmbeddingCache
from core.evaluation.space import intent_geometry, space_metrics
from core.projection import DEFAULT_METHOD, PROJECTIONS
from core.retrieval.explain import explain
from core.retrieval.factory import PredictorFactory
from core.retrieval.rule import Tops
from core.retrieval.scope import OUT_OF_SCOPE, in_scope_labels
from storage.db import Database
from storage.pool_state import pool_stamp
from storage.projects import list_intents
from storage.utterances import UtteranceRow, list_utterances

logger = logging.getLogger(__name__)

FIRST_PICTURE = 600  # the most rows a first picture encodes (the others follow with the map)


def _rows(db: Database, p: ProjectHandle) -> list[UtteranceRow]:
    """Every row of the project: a map holds them all (its figure draws a sample past
    :data:`app.services.design.map_figures.DRAWN_MAX`)."""
    with db.session() as s:
        rows = list_utterances(s, p.id)
    if not rows:
        raise ValueError("This project has no utterances yet: import or add some in the Data tab.")
    return rows


def map_key(
    encoder: CachedEncoder,
    method: str,
    rows: list[UtteranceRow],
    factory: PredictorFactory | None = None,
) -> str:
    """Cache key: encoder fingerprint, method and the (id, text as encoded) content (labels
    excluded; ``factory``: the project's context encoding, when it has one)."""
    texts = [_encoded(factory, r) for r in rows]
    h = hashlib.sha256(json.dumps([[r.id, t] for r, t in zip(rows, texts, strict=True)]).encode())
    fp = "".join(c if c.isalnum() else "_" for c in encoder.fingerprint)
    return f"{fp}__{method}__{h.hexdigest()[:16]}"


def _encoded(factory: PredictorFactory | None, row: UtteranceRow) -> str:
    """What the encoder sees of a row: after its context when the project encodes context."""
    return factory.text_of(row.text, row.context) if factory is not None else row.text


def _pool_rows(rows: list[UtteranceRow]) -> list[UtteranceRow]:
    """The rows of the labelled `train` pool (out of scope is no intent: never in a pool)."""
    return [r for r in rows if r.split == "train" and in_scope_labels(r.labels)]


def _classify(
    factory: PredictorFactory,
    cache: EmbeddingCache,
    rows: list[UtteranceRow],
    vectors: np.ndarray,
    pool: list[UtteranceRow],
) -> Tops:
    """The ranking of each of ``rows`` (their ``vectors``) by the version's Predictor over the
    train ``pool`` (a row of the pool scored without itself: leave-one-out)."""
    texts = [_encoded(factory, r) for r in pool]
    predictor = factory.build(
        texts,
        [r.labels for r in pool],
        vectors=cache.encode(_cached(factory), texts) if pool else None,
        ids=[r.id for r in pool],
    )
    in_pool = {r.id for r in pool}
    # what rank() puts first, for every point at once
    return predictor.tops(
        vectors, exclude_ids=[r.id if r.id in in_pool else None for r in rows], show=5
    )


def map_factory(
    factories: FactoryBuilder, p: ProjectHandle, version: Version
) -> tuple[PredictorFactory, str]:
    """The Predictor factory a map of ``version`` is drawn (and its points explained) with, and
    its label: the version in the space that serves it (its int8 copy when it serves int8,
    :func:`resolve_factory`): for the active version the vectors the live pool, the queue and
    the test split already have, so a first map encodes nothing more; its colours are what Try
    answers."""
    return resolve_factory(factories, p, version)


def _view(
    maps: MapStore,
    p: ProjectHandle,
    version: Version,
    method: str,
    points: np.ndarray,
    key: str,
    rows: list[UtteranceRow] | None = None,
) -> MapView:
    """The map's live view (of ``rows``, by default every row); the same one again while
    nothing its colours come from changed (the pool's stamp: labels, intents, settings, the
    active version): a cached map is drawn without ranking every point again."""
    with maps.db.session() as s:
        stamp = pool_stamp(s, p.id)
    factory, label = map_factory(maps.factories, p, version)
    memo = (key, label, stamp)
    seen = maps.view(memo)
    if seen is None:
        rows = rows if rows is not None else _rows(maps.db, p)
        seen = maps.keep(memo, _fresh_view(p, factory, label, method, points, rows, maps.cache))
    return seen


def _fresh_view(
    p: ProjectHandle,
    factory: PredictorFactory,
    label: str,
    method: str,
    points: np.ndarray,
    rows: list[UtteranceRow],
    cache: EmbeddingCache,
) -> MapView:
    """The view of ``rows``: their places, and the predictions and space metrics of the rows
    its figure draws (every row up to :data:`~app.services.design.map_figures.DRAWN_MAX`; past
    it the others have no prediction, ``None`` and a NaN margin: ranking 250,000 rows took 48 s
    at every label)."""
    gold = [in_scope_labels(r.labels) for r in rows]  # out of scope is never drawn as an intent
    first = np.array([bool(g) or r.split != "unlabelled" for g, r in zip(gold, rows, strict=True)])
    at = sample_positions([r.id for r in rows], first)
    drawn = [rows[i] for i in at]
    vectors = cache.encode(_cached(factory), [_encoded(factory, r) for r in drawn])
    preds = _classify(factory, cache, drawn, vectors, _pool_rows(rows))
    predicted: list[str | None] = [None] * len(rows)
    margins = [math.nan] * len(rows)
    for k, i in enumerate(at):
        predicted[i], margins[i] = preds.intents[k], float(preds.margins[k])
    labels = [gold[i] or None for i in at]
    return MapView(
        project=p.name,
        version_label=label,
        method=method,
        ids=[r.id for r in rows],
        texts=[r.text for r in rows],
        gold=gold,
        predicted=predicted,
        margins=margins,
        splits=[r.split for r in rows],
        points=points,
        metrics=space_metrics(vectors, labels),
        geometry=intent_geometry(vectors, labels),
    )


def _cached(factory: PredictorFactory) -> CachedEncoder:
    return cast(CachedEncoder, factory.encoder)


def _check_method(method: str) -> None:
    if method not in PROJECTIONS:
        raise ValueError(
            f"Unknown projection method {method!r}: use one of {', '.join(PROJECTIONS)}."
        )


class _Lookup(NamedTuple):
    """A map's cache lookup: what draws it, its rows, its key and its points (None: the
    projection is not cached)."""

    factory: PredictorFactory
    rows: list[UtteranceRow]
    key: str
    points: np.ndarray | None


def _lookup(
    maps: MapStore,
    p: ProjectHandle,
    method: str,
    version: Version,
    rows: list[UtteranceRow] | None = None,
) -> _Lookup:
    """The map of ``rows`` (default: every row of the project) drawn by ``version`` with
    ``method``, as the cache has it: keyed by the space that draws it (:func:`map_key`)."""
    _check_method(method)
    factory, _ = map_factory(maps.factories, p, version)
    rows = _rows(maps.db, p) if rows is None else rows
    key = map_key(_cached(factory), method, rows, factory)
    return _Lookup(factory, rows, key, maps.load(key, [r.id for r in rows]))


def _points(maps: MapStore, found: _Lookup, method: str) -> np.ndarray:
    """The points of ``found``'s rows by ``method``: the cached ones, else projected now from
    their vectors (encoded where the cache lacks them) and cached under ``found``'s key."""
    if found.points is not None:
        return found.points
    texts = [_encoded(found.factory, r) for r in found.rows]
    points = maps.project(maps.cache.encode(_cached(found.factory), texts), method)
    maps.save(found.key, [r.id for r in found.rows], points)
    return points


def get_map(
    maps: MapStore, p: ProjectHandle, *, method: str = DEFAULT_METHOD, version: Version = None
) -> MapView:
    """The map if its projection is cached. Otherwise a PCA map (:data:`QUICK`: computed now,
    well under a second once the vectors are there) marked ``provisional``, while ``method``'s
    projection is computed in the background: the next call after it landed returns it (the UI
    polls). What a user waits for on a first render is a picture, not UMAP."""
    found = _lookup(maps, p, method, version)
    factory, rows, key, points = found
    if points is not None:
        return _view(maps, p, version, method, points, key, rows)
    if method == QUICK:
        return compute_map(maps, p, method=method, version=version)
    # The picture first, of the rows whose vectors are there (and a few more, the labelled
    # first, when there are few); the others (just imported: half of a 31 s first picture was
    # encoding them) are encoded with the projection, off-request, and join it when it lands.
    texts = [_encoded(factory, r) for r in rows]
    missing = set(maps.cache.missing(_cached(factory), texts))
    drawn = {r.id for r, t in zip(rows, texts, strict=True) if t not in missing}
    cold = sorted((r for r in rows if r.id not in drawn), key=lambda r: r.split != "train")
    drawn |= {r.id for r in cold[: max(0, FIRST_PICTURE - len(drawn))]}
    ready = [r for r in rows if r.id in drawn]
    quick = (
        dataclasses.replace(_quick(maps, p, version, ready), waiting=len(rows) - len(ready))
        if len(ready) < len(rows)
        else compute_map(maps, p, method=QUICK, version=version)
    )

    maps.submit(key, lambda: _points(maps, found, method))
    return dataclasses.replace(quick, provisional=True)


def cached_map(
    maps: MapStore, p: ProjectHandle, *, method: str = DEFAULT_METHOD, version: Version = None
) -> MapView | None:
    """The map when its projection is cached, else None (nothing is started)."""
    _, rows, key, points = _lookup(maps, p, method, version)
    return None if points is None else _view(maps, p, version, method, points, key, rows)


def sampled_map(
    maps: MapStore,
    p: ProjectHandle,
    *,
    version: Version = None,
    unlabelled: int = 300,
    method: str = QUICK,
) -> MapView | None:
    """The report's map: every labelled row (train and test: the pool decides the colours)
    and a seeded sample of at most ``unlabelled`` other rows. ``method`` other than PCA: the
    cached map of every row cut to them, None when it is not cached; PCA: a map of them alone
    (their vectors mostly the evaluation's: the unlabelled rows need not be encoded in every
    space)."""
    rows = _rows(maps.db, p)
    other = [r for r in rows if r.split not in ("train", "test")]
    full = None if method == QUICK else cached_map(maps, p, method=method, version=version)
    if full is not None:  # the sample among the rows it ranked (all but past DRAWN_MAX)
        ranked = {i for i, m in zip(full.ids, full.margins, strict=True) if not math.isnan(m)}
        other = [r for r in other if r.id in ranked]
    chosen = {r.id for r in random.Random(0).sample(other, min(unlabelled, len(other)))}
    keep = [r for r in rows if r.split in ("train", "test") or r.id in chosen]
    if method != QUICK:
        if full is None:
            return None
        wanted = {r.id for r in keep}
        return cut(full, [i for i, row_id in enumerate(full.ids) if row_id in wanted])
    return _quick(maps, p, version, keep)


def _quick(maps: MapStore, p: ProjectHandle, version: Version, keep: list[UtteranceRow]) -> MapView:
    """A PCA map of ``keep``, some of the project's rows, alone (cached as such)."""
    found = _lookup(maps, p, QUICK, version, keep)
    points = _points(maps, found, QUICK)
    return _view(maps, p, version, QUICK, points, found.key, rows=keep)


def compute_map(
    maps: MapStore, p: ProjectHandle, *, method: str = DEFAULT_METHOD, version: Version = None
) -> MapView:
    """The map, computing (and caching) its projection now if needed (blocking)."""
    found = _lookup(maps, p, method, version)
    points = _points(maps, found, method)
    return _view(maps, p, version, method, points, found.key, found.rows)


def explain_utterance(
    factories: FactoryBuilder, p: ProjectHandle, utterance_id: int, *, version: Version = None
) -> dict[str, Any]:
    """The evidence card of one utterance, from the version's Predictor over the train pool
    (a train item is scored without itself: leave-one-out), as the Map colours it."""
    factory, _ = map_factory(factories, p, version)
    rows = _rows(factories.db, p)
    target = next((r for r in rows if r.id == int(utterance_id)), None)
    if target is None:
        raise ValueError(f"No utterance #{utterance_id} in project {p.name!r}.")
    with factories.db.session() as s:
        intents = [i for i in list_intents(s, p.id) if i.name != OUT_OF_SCOPE]
    descriptions = {i.name: i.description for i in intents if i.description}
    pool = _pool_rows(rows)
    texts = [_encoded(factory, r) for r in pool]
    predictor = factory.build(
        texts,
        [r.labels for r in pool],
        vectors=factories.cache.encode(_cached(factory), texts) if pool else None,
        ids=[r.id for r in pool],
    )
    asked = _encoded(factory, target)
    query = factories.cache.encode(_cached(factory), [asked])
    pred = predictor.rank(query, exclude_ids=[target.id])[0]
    ex = explain(
        asked,
        pred,
        gold=in_scope_labels(target.labels),
        intents=[i.name for i in intents],
        intent_descriptions=descriptions,
    )
    out = ex.to_dict()
    out["id"] = target.id
    out["split"] = target.split
    return out
