"""The Map tab's lasso label with the values the widgets hold: it labels exactly what the preview
on screen counted, and refuses (nothing changed, a fresh preview shown) when the selection moved
on since, as a lasso and a click on Label can cross."""

from __future__ import annotations

from app.services import data as data_svc
from app.ui import map_tab


def _unlabelled(ctx, project) -> list[int]:
    return [r["id"] for r in data_svc.table(ctx, project, split="unlabelled")]


def test_the_lasso_label_does_what_its_preview_said_and_nothing_else(ctx, demo):
    ids = _unlabelled(ctx, demo)
    assert len(ids) >= 4
    first = ",".join(map(str, ids[:2]))
    summary, previewed = map_tab.preview(ctx, demo, first, "track_order", False)
    assert "2 unlabelled will become track_order" in summary
    # the selection grew (a second lasso) before its preview arrived; Label was pressed
    wider = ",".join(map(str, ids[:4]))
    msg, fresh_summary, fresh = map_tab.label(ctx, demo, wider, "track_order", False, previewed)
    assert "selection changed since the preview" in msg and "nothing was labelled" in msg
    assert _unlabelled(ctx, demo) == ids  # nothing changed
    assert "4 unlabelled will become track_order" in fresh_summary
    msg, cleared, _ = map_tab.label(ctx, demo, wider, "track_order", False, fresh)
    assert "Labelled 4 utterance(s) as track_order" in msg and cleared == ""
    assert _unlabelled(ctx, demo) == ids[4:]


def test_rows_labelled_after_the_preview_are_refused_not_relabelled(ctx, demo):
    ids = _unlabelled(ctx, demo)[:3]
    text = ",".join(map(str, ids))
    _, previewed = map_tab.preview(ctx, demo, text, "track_order", False)
    data_svc.label_utterance(ctx, demo, ids[0], ["greet"])  # someone else, meanwhile
    msg, summary, _ = map_tab.label(ctx, demo, text, "track_order", False, previewed)
    assert "2 unlabelled will become track_order" in summary  # the fresh count
    assert "Preview again" in msg and "Nothing was changed" in msg
    assert ids[1] in _unlabelled(ctx, demo) and ids[2] in _unlabelled(ctx, demo)
    assert next(r for r in data_svc.table(ctx, demo) if r["id"] == ids[0])["intents"] == "greet"
