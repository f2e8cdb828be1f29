"""A new version's pool built while the one before it answers (issue 71 item 5).

When another model starts serving a project (a retrain's version, its better checkpoint, its
int8 copy), the server's next request used to load that model and encode the pool in its space
before it answered: seconds of a key's wait, 8 s at worst, while the worker had those vectors
ready. With :attr:`app.serving.live.LivePools.switch_in_background` (the server) the pool that
answered goes on answering, its rows kept up to date (a label counts at once, in its space),
while :class:`PoolSwitch` builds the new one in a thread of its own (the model loaded, the rows'
vectors read from the embedding cache the worker filled, its thresholds calibrated) and puts it
in place once ready; the Label tab says meanwhile which version answers. A build that fails is
logged and tried again on the next call; one asked for twice runs once; one that another model
overtook is not installed."""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Protocol

from core.encoding.exit_gate import Exiting
from core.errors import logged

if TYPE_CHECKING:
    from app.project_settings import ProjectSettings
    from storage.tables import ModelVersion

logger = logging.getLogger(__name__)


class Pools(Protocol):
    """What a switch needs of :class:`app.serving.live.LivePools`."""

    def build_pool(
        self,
        project_id: int,
        key: str,
        mv: ModelVersion | None,
        base: str,
        settings: ProjectSettings,
    ) -> Any: ...

    def install(self, project_id: int, key: str, made: Any) -> bool: ...


class PoolSwitch:
    """The background builds of a :class:`~app.serving.live.LivePools`' new pools."""

    def __init__(self, live: Pools) -> None:
        self.live = live
        self._lock = threading.Lock()
        self._building: set[tuple[int, str]] = set()
        self._threads: list[threading.Thread] = []

    def start(
        self,
        project_id: int,
        key: str,
        mv: ModelVersion | None,
        base: str,
        settings: ProjectSettings,
    ) -> None:
        """Build the pool of ``key`` (what serves the project now) in the background, once."""
        with self._lock:
            if (project_id, key) in self._building:
                return
            self._building.add((project_id, key))

        def build() -> None:
            try:
                began = time.monotonic()
                made = self.live.build_pool(project_id, key, mv, base, settings)
                if self.live.install(project_id, key, made):
                    took = time.monotonic() - began
                    logger.info(
                        "project %s: now answered by %s (built in %.1f s)", project_id, key, took
                    )
            except Exiting:  # the process is exiting (core.encoding.exit_gate)
                return
            except Exception:  # the pool before it answers on; the next call tries again
                logged(logger, "switching project %s to %s failed", project_id, key)
            finally:
                with self._lock:
                    self._building.discard((project_id, key))

        thread = threading.Thread(target=build, name=f"switch-{project_id}", daemon=True)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def wait(self, timeout: float | None = None) -> None:
        """Wait for the builds under way (tests; a closing server)."""
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout)
