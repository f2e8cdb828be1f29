"""``intent-studio worker --check``: whether a worker with these settings could take a job now,
without starting one. It is the worker containers' healthcheck (``compose.yaml``), so it stays
light: no encoder, no torch (unless the settings ask for CUDA), a few seconds at most.

It checks what a job needs: the database answers and has the schema (the newest job is read),
the worker's settings agree with the app's as that job recorded them (else the worker refuses
every job), the queue answers (Redis ``PING``; the local SQLite queue's folder is writable), the
model store takes a listing (the bucket exists and the keys are accepted), and, when
``INTENT_STUDIO_DEVICE`` asks for CUDA, torch sees a GPU.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> from app.config import Settings
    >>> from storage.db import Database, sqlite_url
    >>> settings = Settings(Path(tempfile.mkdtemp()))
    >>> Database(sqlite_url(settings.data_dir / "studio.db")).dispose()
    >>> problems(settings)
    []
"""

from __future__ import annotations

from app.config import DEPLOYMENT, ENV_DEVICE, Settings
from app.serving.readiness import failed, queue_problem, store_problem
from core.errors import raise_if_bug

# Seconds a check waits for a server that does not answer (the healthcheck's own limit is longer).
CONNECT_TIMEOUT = 5


def problems(settings: Settings) -> list[str]:
    """What would stop a worker with ``settings`` from running a job now; empty when nothing."""
    found = _database(settings)
    found += _queue(settings)
    found += _artifacts(settings)
    found += _device(settings)
    return found


def _database(settings: Settings) -> list[str]:
    from storage import jobs
    from storage.db import Database

    url = settings.database_url
    if url.startswith("postgresql") and "connect_timeout" not in url:
        url += ("&" if "?" in url else "?") + f"connect_timeout={CONNECT_TIMEOUT}"
    db = Database(url, apply_migrations=False)
    try:
        with db.session() as s:
            newest = jobs.latest_job(s)
    except Exception as exc:
        raise_if_bug(exc)
        return [failed("the database does not answer (or has no schema yet)", exc)]
    finally:
        db.dispose()
    if newest is None:
        return []
    differences = settings.differences_from(newest.config.get(DEPLOYMENT))
    return [
        f"settings differ from the app's (as of job #{newest.id}), so jobs would be refused: {d}"
        for d in differences
    ]


def _queue(settings: Settings) -> list[str]:
    problem = queue_problem(settings, CONNECT_TIMEOUT)
    return [problem] if problem else []


def _artifacts(settings: Settings) -> list[str]:
    problem = store_problem(
        settings.open_artifacts(), settings.artifacts_url or settings.artifacts_dir
    )
    return [problem] if problem else []


def _device(settings: Settings) -> list[str]:
    if not (settings.device or "").startswith("cuda"):
        return []
    from core.encoding.registry import default_device

    if default_device() == "cuda":
        return []
    return [
        f"{ENV_DEVICE} is {settings.device!r} but torch sees no GPU (is the container given one? "
        "compose.yaml's worker-gpu reserves it)"
    ]


def report(settings: Settings) -> tuple[int, str]:
    """The exit status (0 ready, 1 not: Docker's healthcheck codes) and the lines to print."""
    found = problems(settings)
    if found:
        return 1, "\n".join(f"not ready: {p}" for p in found)
    where = "Redis" if settings.queue_url else "the local queue"
    return 0, f"ready: database, {where} and the model store answer"
