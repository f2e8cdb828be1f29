"""A training worker warms up when it starts, not in its first job (issue 55 item 2): each base
encoder its projects train is read once and kept for the process (training copies it, the frozen
base's evaluation and the live pool share it), and a few real training steps run on the device
(:func:`core.training.warm.warm_up`: CUDA's start and its kernels on a GPU, the first forward's
allocations on a CPU). The compute budget says how many steps pay
(:attr:`app.serving.compute.ComputeBudget.warm_up_steps`).

A job that arrives meanwhile waits for the warm-up before it trains (:func:`wait_until_warm`),
so the two never share the device."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from app.serving.compute import ComputeBudget
from app.serving.int8 import builds_int8
from app.serving.live import LivePools
from core.errors import logged
from storage.db import Database
from storage.projects import list_projects

logger = logging.getLogger(__name__)

# How long a job waits for the warm-up at most (then it trains anyway).
WAIT_S = 300.0
_idle = threading.Event()
_idle.set()


def bases_to_warm(db: Database, budget: ComputeBudget) -> list[str]:
    """The base encoders this worker's projects train (most used first), or the one a new
    project would start on when there is none yet."""
    with db.session() as s:
        names = [p.base_encoder for p in list_projects(s)]
    counted = sorted(set(names), key=lambda n: (-names.count(n), n))
    return counted or [budget.new_project_encoder]


def warm_up_worker(
    live: LivePools,
    budget: ComputeBudget,
    *,
    device: str | None = None,
    int8: bool = True,
    steps: int | None = None,
    bases: list[str] | None = None,
    base_copies: bool = False,
    stopping: Callable[[], bool] = lambda: False,
    held: Callable[[], bool] = lambda: False,
) -> threading.Thread:
    """Start warming this worker in a background thread (see the module); returns it.
    ``device``: where it trains (the deployment's; None: the best there is); ``int8``: whether
    the deployment makes int8 copies at all; ``steps``: the training steps to run (default: the budget's); ``bases``: the encoders to
    load (default: every project's, :func:`bases_to_warm`); ``base_copies``: also build each
    base's int8 copy for the projects that serve it (a worker beside the app, not a CLI run);
    ``stopping``: the worker's stop, once asked: the warm-up stops at its next step and starts
    nothing more (a stopped worker loads no encoder); ``held``: whether to wait before it starts
    (at most :data:`WAIT_S`): the server beside it warming up, whose first card waits for the
    cores (:func:`app.perimeter.in_use.server_warming`)."""
    from core.encoding.exit_gate import Exiting
    from core.training import TrainingCancelled
    from core.training.warm import warm_up

    steps = budget.warm_up_steps if steps is None else steps
    _idle.clear()

    def run() -> None:
        try:
            waited = time.monotonic()
            while held() and not stopping() and time.monotonic() - waited < WAIT_S:
                time.sleep(0.25)
            for i, base in enumerate(bases or bases_to_warm(live.db, budget)):
                if stopping():
                    return
                try:
                    # the steps once: the kernels are the device's, whichever encoder runs them
                    warm_up(
                        base,
                        device=device,
                        steps=steps if i == 0 else 0,
                        should_cancel=stopping,
                    )
                    if base_copies and builds_int8(int8, budget) and not stopping():
                        base_int8(live, base)
                except (Exiting, TrainingCancelled):  # the worker stopped: nothing to say
                    return
                except Exception:  # a base that will not load fails its job with the reason
                    logged(logger, "could not warm up the encoder %s", base)
        finally:
            _idle.set()

    thread = threading.Thread(target=run, name="worker-warm-up", daemon=True)
    thread.start()
    return thread


def base_int8(live: LivePools, base: str) -> None:
    """The int8 copy of ``base`` built for the projects on it that were never retrained (they
    serve it: :mod:`app.services.training.base_int8`), with parity on the largest of them."""
    from app.access import open_project
    from app.access.auth import LOCAL
    from app.services.training.base_int8 import ensure_base_int8
    from storage.utterances import count_utterances

    with live.db.session() as s:
        fresh = [p.id for p in list_projects(s) if p.base_encoder == base]
        fresh = [
            pid for pid in fresh if open_project(live.db, pid, LOCAL).active_version_id is None
        ]
        fresh.sort(key=lambda pid: -count_utterances(s, pid))
    for pid in fresh:
        if ensure_base_int8(live, open_project(live.db, pid, LOCAL)) is not None:
            return


def wait_until_warm(
    timeout: float = WAIT_S, should_cancel: Callable[[], bool] | None = None
) -> bool:
    """Wait for a warm-up under way (none: at once); True when none is running any more.
    ``should_cancel`` is polled every half second: True raises
    :class:`core.training.TrainingCancelled` (a job whose worker stops does not wait for the
    warm-up)."""
    from core.training import TrainingCancelled

    end = time.monotonic() + timeout
    while not _idle.wait(min(0.5, max(0.0, end - time.monotonic()))):
        if should_cancel is not None and should_cancel():
            raise TrainingCancelled("stopped while the worker warmed up")
        if time.monotonic() >= end:
            return False
    return True
