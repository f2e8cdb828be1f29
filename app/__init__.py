"""The Gradio UI, the CLI, background jobs, and the service functions joining storage and core."""

from __future__ import annotations

__all__: list[str] = []
