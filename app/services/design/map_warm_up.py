"""The Map's start-up warm-up: plotly's figure modules imported and UMAP compiled in the
projecting process, in the background, before a designer opens the Map (a first figure of a
process took 10 s of imports; UMAP's compilation about a minute of one core); and a project's
first :data:`WARM_ROWS` rows encoded in its served space (the test split was 1,000 of the texts a
31 s first picture encoded)."""

from __future__ import annotations

import logging
import threading

from app.plots import warm_up_figures
from app.serving.live import LivePools
from app.serving.map_store import MapStore
from core.errors import logged
from core.projection import APPROXIMATE_FROM, FIT_MAX
from storage.db import Database
from storage.projects import list_projects
from storage.utterances import count_utterances, list_utterances

logger = logging.getLogger(__name__)

# The most rows of a project the start-up encodes for its map: a first picture draws what is
# encoded, and a larger map encodes the others with its projection, in the background.
WARM_ROWS = 20_000


def start_warm_up(maps: MapStore) -> threading.Thread:
    """Import plotly's figure modules, start the projecting process and compile UMAP there, in
    the background (call once at app start-up); returns the thread. The kernels of maps of
    :data:`~core.projection.APPROXIMATE_FROM` points or more are compiled only when a project
    has that many utterances (a larger map compiles them when first drawn): they cost about
    50 s of one core, which every start-up otherwise takes from labelling."""
    large = draws_large_maps(maps.db)

    def run() -> None:  # UMAP's compilation in the child meanwhile
        compiled = threading.Thread(target=_warm_projector, args=(maps, large), daemon=True)
        compiled.start()
        warm_up_figures()
        compiled.join()

    thread = threading.Thread(target=run, name="map-warm-up", daemon=True)
    thread.start()
    return thread


def _warm_projector(maps: MapStore, large: bool) -> None:
    try:
        maps.projector.warm_up(large=large)
    except Exception:  # the first map will compile instead
        logged(logger, "the map worker's warm-up failed")


def draws_large_maps(db: Database) -> bool:
    """Whether a project's map has :data:`~core.projection.APPROXIMATE_FROM` points or more."""
    with db.session() as s:
        largest = max((count_utterances(s, p.id) for p in list_projects(s)), default=0)
    return min(largest, FIT_MAX) >= APPROXIMATE_FROM  # a larger map lays out FIT_MAX of them


def encode_map_rows(live: LivePools) -> int:
    """Encode every project's first :data:`WARM_ROWS` rows that have no vector yet, in the space
    that serves it (as the queue's warm-up encodes its candidates: the active version's map is drawn
    there), so a first Map after a start-up encodes nothing. Returns how many were new."""
    with live.db.session() as s:
        projects = [p.id for p in list_projects(s)]
    new = 0
    for pid in projects:
        with live.db.session() as s:
            rows = list_utterances(s, pid, limit=WARM_ROWS)
        if rows:
            pool = live.pool(pid)
            texts = [pool.text_of(r) for r in rows]
            new += len(live.cache.missing(pool.encoder, texts))
            live.cache.encode(pool.encoder, texts)
    return new
