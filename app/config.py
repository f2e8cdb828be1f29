"""Where the app keeps its data, and how it is reached. Flags override environment variables,
which override defaults."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_DATA_DIR = ".intent-studio"
ENV_DATA_DIR = "INTENT_STUDIO_DATA_DIR"
ENV_DB_URL = "INTENT_STUDIO_DB_URL"
ENV_DEVICE = "INTENT_STUDIO_DEVICE"
ENV_MAX_INTENTS = "INTENT_STUDIO_MAX_INTENTS"
# The largest file an import or an upload takes (the one limit: pass it to Gradio's
# ``max_file_size`` as well); the import formats refuse anything larger before reading it.
MAX_UPLOAD_BYTES = 25 * 1024 * 1024


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

    @property
    def database_url(self) -> str:
        from storage.db import sqlite_url

        return self.db_url or sqlite_url(self.data_dir / "studio.db")

    @property
    def artifacts_dir(self) -> Path:
        return self.data_dir / "artifacts"

    @property
    def cache_dir(self) -> Path:
        return self.data_dir / "cache"

    @property
    def queue_path(self) -> Path:
        return self.data_dir / "queue.db"


def load_settings(data_dir: str | Path | None = None, db_url: str | None = None) -> Settings:
    chosen = Path(data_dir or os.environ.get(ENV_DATA_DIR) or DEFAULT_DATA_DIR).expanduser()
    chosen.mkdir(parents=True, exist_ok=True)
    return Settings(
        data_dir=chosen.resolve(),
        db_url=db_url or os.environ.get(ENV_DB_URL) or None,
        device=os.environ.get(ENV_DEVICE) or None,
        max_intents=_positive_int(ENV_MAX_INTENTS),
    )


def _positive_int(env: str) -> int | None:
    raw = os.environ.get(env, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{env} must be a whole number of at least 1, not {raw!r}.")
    return int(raw)
