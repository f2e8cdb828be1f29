"""A page left open and untouched draws a few frames a second, not sixty: Gradio's page (6.31)
keeps its loading indicator's loop of animation frames going after it removed the indicator
(~5 % of a core in the page's process and more in the compositor, as long as a designer's tab
stays open); ``assets/frames.js``, first in the page's head (app/ui/first_script.py), slows a
loop that runs on. Counted by Chromium's own trace of the frames it began."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import open_tab

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

WATCH_S = 3.0
# 60 a second before; after: 4 a second for the slowed loop, plus the frames of the page's two
# 5 s polls and of what the server pushes meanwhile
MOST_FRAMES = 20 * WATCH_S


def frames_begun(page, seconds: float) -> int:
    """The frames Chromium began for ``page`` in the next ``seconds`` (its trace's BeginFrame)."""
    cdp = page.context.new_cdp_session(page)
    categories = "devtools.timeline,disabled-by-default-devtools.timeline.frame"
    cdp.send("Tracing.start", {"categories": categories, "transferMode": "ReturnAsStream"})
    page.wait_for_timeout(seconds * 1000)
    ended: list[dict] = []
    cdp.on("Tracing.tracingComplete", lambda event: ended.append(event))
    cdp.send("Tracing.end")
    while not ended:
        page.wait_for_timeout(50)
    trace, eof = "", False
    while not eof:
        chunk = cdp.send("IO.read", {"handle": ended[0]["stream"]})
        trace, eof = trace + chunk["data"], chunk.get("eof", False)
    events = json.loads(trace)
    events = events["traceEvents"] if isinstance(events, dict) else events
    return sum(1 for e in events if e.get("name") == "BeginFrame")


def test_an_idle_page_draws_a_few_frames_a_second(server, page):
    page.goto(server.url)
    open_tab(page, "Label")
    page.wait_for_timeout(6_000)  # the page's loops have run on for longer than they may
    begun = frames_begun(page, WATCH_S)
    assert begun <= MOST_FRAMES, f"{begun} frames in {WATCH_S} s on an idle page"
    # ...and what draws for a reason still draws at once: a click opens its tab
    open_tab(page, "Data")
