"""Issue 75 item 5 in Chromium on the BANKING77 project: a bulk label right after a filter change
was refused 2 of 3 times ("What the screen shows changed since the preview… nothing was
labelled"). The button holds the click while its preview counts again, however late the count
comes. Keys at 80 and 30 ms each."""

from __future__ import annotations

import re

import pytest

from tests.e2e.banking77.round6 import _page, _says
from tests.e2e.conftest import open_tab

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


# A server that answers slowly (issue 75 ran at load 12-47): every event the page sends while
# window.__slowMs is set reaches the server that much later
SLOW = """(() => {
  const send = window.fetch.bind(window);
  window.fetch = async (...args) => {
    const url = String(args[0]?.url || args[0]);
    if (window.__slowMs && url.includes('/queue/join')) {
      await new Promise((r) => setTimeout(r, window.__slowMs));
    }
    return send(...args);
  };
})();"""
READY = (
    "() => { const b = document.querySelector('#bulk-label');"
    " return !b.classList.contains('counting')"
    " && !!document.querySelector('#bulk-preview [data-token]'); }"
)


@pytest.mark.parametrize("delay", [80, 30])
def test_the_bulk_label_holds_the_click_while_its_preview_counts_again(
    banking77_server, browser, delay
):
    """Item 5: right after a search applied by Enter, Label was refused 2 of 3 times ("What the
    screen shows changed since the preview… nothing was labelled"): 3 s after Enter the page gave
    the old preview's token back though the new one had not come (it took longer on a busy
    server). Here the server answers 4.5 s late: a click 3.5 s after Enter finds the button still
    counting and labels nothing; once the new preview shows, Label does exactly it."""
    context, page = _page(browser, 1440, 900, SLOW)
    try:
        page.goto(banking77_server.url)
        open_tab(page, "Data")
        page.get_by_text("Label every row the filters show").click()
        page.locator("#bulk-intent input").click()
        page.keyboard.type("card_arrival", delay=delay)
        page.keyboard.press("Enter")
        search = page.get_by_label("Text contains")
        search.click()
        page.keyboard.type("transfer", delay=delay)
        page.keyboard.press("Enter")
        _says(page, "#bulk-preview", "will become card_arrival")
        page.wait_for_function(READY)

        search.fill("")
        search.click()
        page.keyboard.type("top up", delay=delay)
        page.evaluate("() => { window.__slowMs = 4500; }")
        page.keyboard.press("Enter")
        page.wait_for_timeout(3500)  # past the page's old 3 s
        held = page.evaluate(
            "() => document.querySelector('#bulk-label').classList.contains('counting')"
        )
        box = page.locator("#bulk-label").bounding_box()
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.evaluate("() => { window.__slowMs = 0; }")
        page.wait_for_function(READY)
        page.wait_for_timeout(6000)  # an answer to that click would have come by now
        result = page.inner_text("#bulk-result")
        assert held, "the button gave the old preview back before the new one came"
        assert "changed since the preview" not in result and "Labelled" not in result, result
        now = int(re.search(r"(\d+) unlabelled", page.inner_text("#bulk-preview"))[1])
        page.locator("#bulk-label").click()  # the preview on screen is what gets done
        _says(page, "#bulk-result", f"Labelled {now} utterance(s) as card_arrival")
        page.locator("#undo").click()  # as the folder's other modules expect the project
        _says(page, "#data-status", f"label of {now} utterance(s)")
    finally:
        context.close()
