"""The whole Gradio app builds on a fresh data directory (a wiring mistake — a callback whose
signature Gradio cannot use, an output list of the wrong length — fails here, before any
browser test)."""

from __future__ import annotations


def test_the_app_builds_with_every_tab(ctx, demo):
    from app.ui.main import build_app

    app = build_app(ctx)
    labels = {getattr(block, "label", None) for block in app.blocks.values()}
    assert {"Label", "Data", "Try", "Train", "Map", "Activity"} <= labels
    ids = {getattr(block, "elem_id", None) for block in app.blocks.values()}
    assert {"queue-card", "utterance-table", "edit-panel", "bulk-label", "activity-undo"} <= ids
