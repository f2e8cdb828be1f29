"""The Map tab's lasso label with the values the widgets hold: it labels exactly what the preview
on screen counted (its token, read off the page), refuses while a new one is being counted (a
lasso and a click on Label can cross), and refuses, nothing changed, a fresh preview shown, when
rows changed since."""

from __future__ import annotations

import re

from app.services.labelling import data as data_svc
from app.ui import map_tab
from tests.handles import live


def _unlabelled(serving_state, project) -> list[int]:
    return [
        r["id"]
        for r in data_svc.table(serving_state.db, live(serving_state, project), split="unlabelled")
    ]


def _token(preview_html: str) -> str:
    found = re.search(r"data-token='(\w+)'", preview_html)
    return found.group(1) if found else ""


def test_the_lasso_label_does_what_its_preview_said_and_nothing_else(serving_state, demo):
    ids = _unlabelled(serving_state, demo)
    assert len(ids) >= 4
    first = ",".join(map(str, ids[:2]))
    summary, previews = map_tab.preview(serving_state.db, demo, first, "track_order", False, {})
    assert "2 unlabelled will become track_order" in summary
    # the selection grew (a second lasso) and its preview is being counted: Label was pressed
    wider = ",".join(map(str, ids[:4]))
    msg, _, previews = map_tab.label(
        serving_state.db, demo, wider, "track_order", False, previews, ""
    )
    assert "still being counted" in msg and "nothing was labelled" in msg
    assert _unlabelled(serving_state, demo) == ids  # nothing changed
    # the old preview still on screen, the new selection too: refused, the new one counted
    msg, fresh, previews = map_tab.label(
        serving_state.db, demo, wider, "track_order", False, previews, _token(summary)
    )
    assert "changed since the preview" in msg and _unlabelled(serving_state, demo) == ids
    assert "4 unlabelled will become track_order" in fresh
    msg, _, previews = map_tab.label(
        serving_state.db, demo, wider, "track_order", False, previews, _token(fresh)
    )
    assert "Labelled 4 utterance(s) as track_order" in msg
    assert _unlabelled(serving_state, demo) == ids[4:]


def test_rows_labelled_after_the_preview_are_refused_not_relabelled(serving_state, demo):
    ids = _unlabelled(serving_state, demo)[:3]
    text = ",".join(map(str, ids))
    shown, previews = map_tab.preview(serving_state.db, demo, text, "track_order", False, {})
    data_svc.label_utterance(
        serving_state.db, demo, ids[0], ["refund_status"]
    )  # someone else, meanwhile
    msg, summary, _ = map_tab.label(
        serving_state.db, demo, text, "track_order", False, previews, _token(shown)
    )
    assert "2 unlabelled will become track_order" in summary  # the fresh count
    assert "Preview again" in msg and "Nothing was changed" in msg
    assert ids[1] in _unlabelled(serving_state, demo) and ids[2] in _unlabelled(serving_state, demo)
    assert (
        next(r for r in data_svc.table(serving_state.db, demo) if r["id"] == ids[0])["intents"]
        == "refund_status"
    )
