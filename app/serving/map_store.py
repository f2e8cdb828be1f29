"""The Map tab's store: projection files on disk (one per encoder, method and set of texts),
the background computations in flight, the process that projects them (:class:`Projector`) and
the live views drawn from them (:mod:`app.services.design.maps` computes both), with the factory
builder that scores their points. One per process (:attr:`app.serving.state.ServingState.maps`,
under ``<data dir>/maps``); the projector's process starts at the first projection."""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import subprocess
import sys
import threading
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from app.serving.factories import FactoryBuilder
from core.encoding.cache import EmbeddingCache
from core.projection import project as project_points

QUICK = "pca"  # the projection computed at once, in this process (the others in a child's)

logger = logging.getLogger(__name__)

VIEWS_KEPT = 8  # live map views kept in memory (a few projects x versions x methods)


@dataclass
class MapView:
    """A rendered-ready map: coordinates plus the live labels, predictions and metrics."""

    project: str
    version_label: str
    method: str
    ids: list[int]
    texts: list[str]
    gold: list[tuple[str, ...]]
    predicted: list[str | None]
    margins: list[float]
    splits: list[str]
    points: np.ndarray
    metrics: dict[str, float] = field(default_factory=dict)
    # per intent: spread and gap to the nearest intent, in the encoder's space
    geometry: dict[str, dict[str, Any]] = field(default_factory=dict)
    # a quick projection shown while the one asked for is computed (app.services.design.maps.get_map)
    provisional: bool = False
    # the project's rows left out of a provisional picture: their vectors were not there yet
    # (they are encoded with the projection, in the background, and join the map when it lands)
    waiting: int = 0
    # what a page names the view by (a lasso's region is tested against its rows:
    # app.services.design.map_region), given when the store keeps it
    token: str = ""


class ProjectorError(RuntimeError):
    """The projecting process refused a request or stopped."""


class Projector:
    """One child process (:mod:`core.projection_worker`) that projects maps, so that UMAP's
    numba epochs never hold this process's GIL (see that module). Started on first use and
    again after it died; one request at a time. It ends with its input: when :meth:`close` is
    called or this process exits, however it exits."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None

    def project(self, vectors: np.ndarray, method: str) -> np.ndarray:
        """``core.projection.project(vectors, method)``, computed in the child."""
        points = self._call("project", {"vectors": np.asarray(vectors), "method": method})
        return np.asarray(points, dtype=np.float32)

    def warm_up(self, *, large: bool) -> float:
        """Start the child and compile UMAP's kernels there; returns the seconds it took."""
        return float(self._call("warm_up", {"large": large}))

    def _call(self, kind: str, payload: dict[str, Any]) -> Any:
        with self._lock:
            proc = self._running()
            assert proc.stdin is not None and proc.stdout is not None  # both are pipes
            try:
                pickle.dump((kind, payload), proc.stdin)
                proc.stdin.flush()
                status, value = pickle.load(proc.stdout)
            except (OSError, EOFError, pickle.UnpicklingError) as exc:
                self._stop()
                raise ProjectorError(f"the map's projecting process stopped ({exc!r})") from exc
        if status != "ok":
            raise ProjectorError(str(value))
        return value

    def _running(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            root = str(Path(__file__).resolve().parents[2])  # where ``core`` is importable
            env = {
                **os.environ,
                "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]),
            }
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "core.projection_worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
            )
        return self._proc

    def _stop(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None

    def close(self) -> None:
        """End the child (its input closes; killed if it does not end at once)."""
        with self._lock:
            if self._proc is None:
                return
            if self._proc.stdin is not None:
                self._proc.stdin.close()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._stop()
            self._proc = None


class MapStore:
    """Projection files on disk plus the background computations in flight (one per key)."""

    def __init__(self, root: Path, factories: FactoryBuilder) -> None:
        self.root = root
        self.factories = factories  # what scores the points a map shows
        self.db = factories.db
        self._lock = threading.Lock()
        self._pending: dict[str, Future[np.ndarray]] = {}
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="map")
        self.projector = Projector()
        # live views by (projection key, version, pool stamp), oldest first (see _view)
        self._views: dict[tuple[Any, ...], MapView] = {}

    @property
    def cache(self) -> EmbeddingCache:
        return self.factories.cache

    def path(self, key: str) -> Path:
        return self.root / f"{key}.npz"

    def project(self, vectors: np.ndarray, method: str) -> np.ndarray:
        """``vectors`` projected with ``method``: PCA here (well under a second, in numpy,
        which lets the GIL go), the others in the :class:`Projector`'s process."""
        if method == QUICK:
            return project_points(vectors, method)
        return self.projector.project(vectors, method)

    def view(self, memo: tuple[Any, ...]) -> MapView | None:
        with self._lock:
            return self._views.get(memo)

    def keep(self, memo: tuple[Any, ...], view: MapView) -> MapView:
        """Remember ``view`` under ``memo`` (the :data:`VIEWS_KEPT` latest), named by a token
        made from ``memo`` (:meth:`by_token`); returns it."""
        view.token = hashlib.sha256(repr(memo).encode()).hexdigest()[:20]
        with self._lock:
            self._views[memo] = view
            while len(self._views) > VIEWS_KEPT:
                self._views.pop(next(iter(self._views)))
        return view

    def by_token(self, token: str) -> MapView | None:
        """The kept view named ``token``, or None (never kept, or no longer)."""
        with self._lock:
            return next((v for v in self._views.values() if token and v.token == token), None)

    def load(self, key: str, ids: list[int]) -> np.ndarray | None:
        p = self.path(key)
        if not p.exists():
            return None
        try:
            with np.load(p, allow_pickle=False) as z:
                if z["ids"].tolist() != ids:
                    return None
                return np.asarray(z["points"], dtype=np.float32)
        except (OSError, ValueError, KeyError) as exc:  # torn file: recompute
            logger.warning("dropping unreadable map %s: %s", p, exc)
            p.unlink(missing_ok=True)
            return None

    def save(self, key: str, ids: list[int], points: np.ndarray) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / f".{key}.{uuid.uuid4().hex}.npz"
        np.savez(tmp, ids=np.asarray(ids, dtype=np.int64), points=points)
        tmp.replace(self.path(key))

    def submit(self, key: str, fn: Any) -> Future[np.ndarray]:
        with self._lock:
            fut = self._pending.get(key)
            if fut is None or fut.done():
                fut = self._pool.submit(fn)
                self._pending[key] = fut

                def forget(_done: Future[np.ndarray], k: str = key) -> None:
                    self._forget(k)

                fut.add_done_callback(forget)
            return fut

    def _forget(self, key: str) -> None:
        with self._lock:
            fut = self._pending.get(key)
            if fut is not None and fut.done():
                del self._pending[key]

    def pending(self, key: str) -> bool:
        with self._lock:
            return key in self._pending
