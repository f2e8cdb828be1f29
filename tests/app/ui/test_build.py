"""The whole Gradio app builds on a fresh data directory (a wiring mistake — a callback whose
signature Gradio cannot use, an output list of the wrong length — fails here, before any
browser test)."""

from __future__ import annotations


def test_the_app_builds_with_every_tab(serving_state, demo):
    from app.ui.main import build_app

    app = build_app(serving_state)
    labels = {getattr(block, "label", None) for block in app.blocks.values()}
    assert {"Label", "Data", "Try", "Train", "Map", "Activity"} <= labels
    ids = {getattr(block, "elem_id", None) for block in app.blocks.values()}
    assert {"queue-card", "utterance-table", "edit-panel", "bulk-label", "activity-undo"} <= ids


def _queue_starts(app) -> dict[str, int]:
    """How many events of each trigger render the Label tab's card without an answer first."""
    card = next(b for b in app.blocks.values() if getattr(b, "elem_id", None) == "queue-card")
    starts: dict[str, int] = {}
    for f in app.fns.values():
        if card in f.outputs and f.trigger_after is None:
            for _, event in f.targets:
                starts[event] = starts.get(event, 0) + 1
    return starts


def test_a_page_load_starts_the_label_queue_once(serving_state, demo):
    """Two fresh queues racing on a page load (one of the project the page had, one of the
    project the picker then set) could replace the card an annotator was already answering."""
    import dataclasses

    from app.serving.state import ServingState
    from app.ui.main import build_app

    single = _queue_starts(build_app(serving_state))
    assert single["load"] == 1 and single["change"] >= 1  # the project is known at build time
    # behind a login the picker's load sets the project: its change is the only start
    multi = ServingState.open(
        dataclasses.replace(serving_state.settings, multi_user=True), database=serving_state.db
    )
    assert "load" not in _queue_starts(build_app(multi))
