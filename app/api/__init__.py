"""The REST API beside the UI (``/api/v1``, docs at ``/docs``): FastAPI routes that call the same
services as the UI, with per-user API tokens in multi-user mode."""

from __future__ import annotations

from app.api.batcher import MicroBatcher
from app.api.server import create_api

__all__ = ["MicroBatcher", "create_api"]
