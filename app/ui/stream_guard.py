"""Every event the server accepted gets its answer on the page, whatever the timing.

Gradio's page (6.31, the newest) receives the answers of all its events on one stream, which
the server closes when the last event it knows of has ended. An event sent in that instant can
be stranded: its join is answered before the page reads the closing message, so the page does
not open another stream and the event's answer waits on the server for good. On a busy server
this is a key of the Label tab that never lands (CI saw it twice, a 60 s wait on an idle
server). ``assets/stream_guard.js`` watches the joins and the streams, and when an accepted
event has no open stream it presses a hidden button whose empty event opens one; the answers
waiting on the server then arrive. ``tests/e2e/test_stream_guard.py`` reproduces the race.
"""

from __future__ import annotations

import gradio as gr

import assets

NUDGE_ID = "stream-nudge"


def add_stream_guard(demo: gr.Blocks) -> None:
    """Add the guard to ``demo``, inside its ``with`` block: the hidden button, the button's
    empty event (queued, so the page opens a stream for it) and the script, run at page load."""
    nudge = gr.Button("reopen", elem_id=NUDGE_ID, elem_classes=["hidden-trigger"])
    nudge.click(_nothing, None, None, show_progress="hidden", api_visibility="private")
    demo.load(None, None, None, js=assets.text("stream_guard.js"), api_visibility="private")


def _nothing() -> None:
    """The nudge's event: it only has to pass through the queue."""
