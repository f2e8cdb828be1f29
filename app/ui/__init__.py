"""The Gradio pages. Gradio's import-time stub writer is skipped before any module here imports
gradio (:mod:`app.ui.gradio_stubs`)."""

from __future__ import annotations

from app.ui.gradio_stubs import install as _skip_gradio_stubs

_skip_gradio_stubs()
