"""Where the app keeps its data, and how it is reached. Flags override environment variables,
which override defaults.

The embedded default needs no server: SQLite, a SQLite job queue and model files in a local folder,
all under the data directory. A team points every process at the same three URLs instead
(``INTENT_STUDIO_DB_URL`` PostgreSQL, ``INTENT_STUDIO_QUEUE_URL`` Redis,
``INTENT_STUDIO_ARTIFACTS_URL`` a folder or an S3-compatible bucket), so ``serve`` on one box and
``worker`` on a GPU box share projects, jobs and model files.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from storage.artifacts import ArtifactStore

DEFAULT_DATA_DIR = ".intent-studio"
ENV_DATA_DIR = "INTENT_STUDIO_DATA_DIR"
ENV_DB_URL = "INTENT_STUDIO_DB_URL"
ENV_DEVICE = "INTENT_STUDIO_DEVICE"
ENV_MAX_INTENTS = "INTENT_STUDIO_MAX_INTENTS"
ENV_MAX_ROWS = "INTENT_STUDIO_MAX_ROWS"
ENV_QUEUE_URL = "INTENT_STUDIO_QUEUE_URL"
ENV_ARTIFACTS_URL = "INTENT_STUDIO_ARTIFACTS_URL"
ENV_JOB_TIMEOUT = "INTENT_STUDIO_JOB_TIMEOUT"
ENV_STOP_GRACE = "INTENT_STUDIO_STOP_GRACE"
ENV_INT8 = "INTENT_STUDIO_INT8"
ENV_AUTO_RETRAIN = "INTENT_STUDIO_AUTO_RETRAIN"
ENV_PUBLIC_HOST = "INTENT_STUDIO_PUBLIC_HOST"
ENV_VERSION_DISK_MB = "INTENT_STUDIO_VERSION_DISK_MB"
# Where a job records the app's settings that its worker must share (Settings.shared_with_workers).
DEPLOYMENT = "deployment"
QUEUE_SCHEMES = ("redis://", "rediss://", "unix://")
DEFAULT_JOB_TIMEOUT = 60  # seconds without a heartbeat before a running job counts as dead
# Seconds a stopping worker lets its job go on to end (app.worker.stopping); compose.yaml's
# stop_grace_period gives the worker this and app.worker.stopping.STOP_MARGIN_S more.
DEFAULT_STOP_GRACE = 30
# The largest file an import or an upload takes (the one limit: pass it to Gradio's
# ``max_file_size`` as well); the import formats refuse anything larger before reading it.
MAX_UPLOAD_BYTES = 25 * 1024 * 1024
DIR_MODE = 0o700  # the data directory's: its account's alone (private_dir)
# The disk a project's model versions may use before a retrain of it is refused, in MB (10^6
# bytes): the issue 71 goal, 1 GB per project (app.services.models.retention).
DEFAULT_VERSION_DISK_MB = 1000


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    db_url: str | None = None
    device: str | None = None
    # Login and roles (``serve --multi-user``); off = single-user local mode, everyone is admin.
    multi_user: bool = False
    # Intents a project may have (import and intent creation refuse more); None: storage's
    # default, 2,000.
    max_intents: int | None = None
    max_rows: int | None = None  # utterances a project may hold (None: storage's default)
    # The job queue: None = a SQLite file in the data directory; ``redis://…`` = Huey's Redis
    # storage, shared by workers on other machines.
    queue_url: str | None = None
    # Model files: None = ``data_dir/artifacts``; a folder, or ``s3://bucket/prefix`` (fsspec).
    artifacts_url: str | None = None
    # Seconds a running job may go without a heartbeat before it is failed as dead.
    job_timeout: int = DEFAULT_JOB_TIMEOUT
    # Seconds a stopped worker (SIGTERM, Ctrl+C) lets its running job go on to end; a job that
    # would not end by then is handed back to the queue (queued again) at its next check.
    stop_grace: int = DEFAULT_STOP_GRACE
    # Whether a retrain exports and checks the version's int8 copy (seconds per retrain); off:
    # every project serves fp32.
    int8: bool = True
    # Whether this deployment's workers start a project's retrain by themselves after new labels
    # (each project decides too: its ``auto_retrain`` setting); off: only when someone asks.
    auto_retrain: bool = True
    # Host names the app answers to besides its loopback names (single-user mode refuses any
    # other ``Host``: DNS rebinding), and whose origins may call it from a browser; ``name`` or
    # ``name:port``.
    public_hosts: tuple[str, ...] = ()
    # The disk each project's model versions may use, in MB (10^6 bytes): a retrain of a project
    # whose kept versions use it already is refused. The operator's, not a project setting: a
    # designer changes their project's settings, and one designer must not fill the disk.
    version_disk_mb: int = DEFAULT_VERSION_DISK_MB

    @property
    def local_workers(self) -> bool:
        """Whether every worker runs on this machine (the queue is a local file), so a worker's
        pid can be checked here; with a shared queue only the heartbeat tells."""
        return self.queue_url is None

    @property
    def database_url(self) -> str:
        from storage.db import sqlite_url

        return self.db_url or sqlite_url(self.data_dir / "studio.db")

    @property
    def artifacts_remote(self) -> bool:
        """Whether model files live in a bucket (a URL such as ``s3://…``) rather than a folder."""
        url = self.artifacts_url or ""
        return "://" in url and not url.startswith("file://")

    @property
    def artifacts_dir(self) -> Path:
        """The folder of model files (the local cache's parent when they live in a bucket)."""
        if self.artifacts_url and not self.artifacts_remote:
            return Path(self.artifacts_url.removeprefix("file://")).expanduser()
        return self.data_dir / "artifacts"

    def open_artifacts(self) -> ArtifactStore:
        """The store of model files: the bucket (read through ``cache_dir/artifacts``) or the
        folder."""
        from storage.remote_artifacts import open_artifacts

        location = (self.artifacts_url or "") if self.artifacts_remote else self.artifacts_dir
        return open_artifacts(location, cache_dir=self.cache_dir / "artifacts")

    def shared_with_workers(self) -> dict[str, str]:
        """The settings an app and its training workers must share, as a job records them: where
        model files go, and whether a retrain exports int8 (the database and the queue are shared
        by construction: a worker that reads the job uses them).

        >>> Settings(Path("/d"), artifacts_url="s3://b/m", int8=False).shared_with_workers()
        {'INTENT_STUDIO_ARTIFACTS_URL': 's3://b/m', 'INTENT_STUDIO_INT8': 'off'}
        """
        where = self.artifacts_url if self.artifacts_remote else str(self.artifacts_dir.resolve())
        return {ENV_ARTIFACTS_URL: str(where), ENV_INT8: "on" if self.int8 else "off"}

    def differences_from(self, recorded: Mapping[str, str] | None) -> list[str]:
        """How these settings differ from ``recorded`` (another process's
        :meth:`shared_with_workers`), one line per setting; empty when they agree.

        >>> app = Settings(Path("/d"), artifacts_url="s3://b/m").shared_with_workers()
        >>> Settings(Path("/d"), artifacts_url="s3://b/m").differences_from(app)
        []
        >>> Settings(Path("/d"), int8=False).differences_from({"INTENT_STUDIO_INT8": "on"})
        ["INTENT_STUDIO_INT8: the app's is 'on', this process's 'off'"]
        """
        mine = self.shared_with_workers()
        return [
            f"{name}: the app's is {value!r}, this process's {mine.get(name)!r}"
            for name, value in sorted((recorded or {}).items())
            if mine.get(name) != value
        ]

    @property
    def cache_dir(self) -> Path:
        return self.data_dir / "cache"

    @property
    def queue_path(self) -> Path:
        return self.data_dir / "queue.db"


def load_settings(data_dir: str | Path | None = None, db_url: str | None = None) -> Settings:
    chosen = Path(data_dir or os.environ.get(ENV_DATA_DIR) or DEFAULT_DATA_DIR).expanduser()
    private_dir(chosen)
    queue_url = os.environ.get(ENV_QUEUE_URL, "").strip() or None
    if queue_url is not None and not queue_url.startswith(QUEUE_SCHEMES):
        raise ValueError(
            f"{ENV_QUEUE_URL} must be a Redis URL (redis://host:6379/0), not {queue_url!r}; "
            "leave it unset for the local SQLite queue."
        )
    return Settings(
        data_dir=chosen.resolve(),
        db_url=db_url or os.environ.get(ENV_DB_URL) or None,
        device=os.environ.get(ENV_DEVICE) or None,
        max_intents=_positive_int(ENV_MAX_INTENTS),
        max_rows=_positive_int(ENV_MAX_ROWS),
        queue_url=queue_url,
        artifacts_url=os.environ.get(ENV_ARTIFACTS_URL, "").strip() or None,
        job_timeout=_positive_int(ENV_JOB_TIMEOUT) or DEFAULT_JOB_TIMEOUT,
        stop_grace=_positive_int(ENV_STOP_GRACE) or DEFAULT_STOP_GRACE,
        int8=_switch(ENV_INT8, default=True),
        auto_retrain=_switch(ENV_AUTO_RETRAIN, default=True),
        public_hosts=tuple(
            h.strip().lower() for h in os.environ.get(ENV_PUBLIC_HOST, "").split(",") if h.strip()
        ),
        version_disk_mb=_positive_int(ENV_VERSION_DISK_MB) or DEFAULT_VERSION_DISK_MB,
    )


def private_dir(path: Path) -> Path:
    """``path`` as a folder, created ``0700`` when it is new (with any missing parent), whatever
    the umask: the data directory is the app's account's alone (issue 73 item 2:
    :mod:`app.perimeter.private_data`). An existing one keeps its mode; the app says at start
    when others may read it."""
    if not path.is_dir():
        path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        os.chmod(path, DIR_MODE)
    return path


def _positive_int(env: str) -> int | None:
    raw = os.environ.get(env, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{env} must be a whole number of at least 1, not {raw!r}.")
    return int(raw)


def _switch(env: str, *, default: bool) -> bool:
    raw = os.environ.get(env, "").strip().lower()
    if not raw:
        return default
    if raw not in ("on", "off"):
        raise ValueError(f"{env} must be on or off, not {raw!r}.")
    return raw == "on"
