"""The Design tab in a real browser: unlabelled logs become a candidate intent (one cluster,
one example unticked, a new intent created), and a merge what-if shows its estimate. Screenshots
at 1440x900 and 1280x720."""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import SHOTS, shot
from tests.samples import GIFT, HOURS, KLARNA

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

DEMO = "Demo: Acme support"
# a name of its own: the Try tab's test (same server, tests/e2e/demo/conftest.py) makes gift_cards
NEW = "gift_card_questions"


def _view(page, name: str, selector: str) -> None:
    """What a designer sees at 1440x900 and 1280x720, scrolled to ``selector``."""
    for w, h in ((1440, 900), (1280, 720)):
        page.set_viewport_size({"width": w, "height": h})
        page.locator(selector).scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"{name}-{w}x{h}.png"))
    page.set_viewport_size({"width": 1400, "height": 1200})


def test_a_cluster_becomes_an_intent_and_a_merge_shows_its_estimate(server, page):
    from gradio_client import Client

    client = Client(server.url, verbose=False)
    for text in GIFT + HOURS + KLARNA:  # unlabelled logs arrive through the API
        client.predict(DEMO, text, [], "unlabelled", api_name="/label")
    page.goto(server.url)
    page.get_by_role("tab", name="Design").click()
    page.get_by_role("tab", name="Candidate intents").click()
    page.locator("#design-find").click()
    page.wait_for_function(
        "() => document.querySelector('#design-clusters-status')?.innerText"
        "?.includes('candidate intents holding')",
        timeout=180_000,
    )
    page.get_by_label("Cluster", exact=True).click()
    page.get_by_role("option", name=re.compile(r"· gift")).first.click()
    boxes = page.locator("#design-cluster-examples input[type=checkbox]")
    page.wait_for_function(
        "() => [...document.querySelectorAll('#design-cluster-examples label')]"
        ".some((l) => l.innerText.toLowerCase().includes('gift'))"
    )
    n = boxes.count()
    assert n >= 5
    page.locator("#design-cluster-examples label").last.click()  # one does not belong
    page.wait_for_function(
        "(n) => document.querySelectorAll('#design-cluster-examples input:checked').length"
        " === n - 1",
        arg=n,
    )
    page.wait_for_selector("#design-cluster-map .js-plotly-plot", timeout=180_000)
    page.locator("#design-new-name textarea, #design-new-name input").first.fill(NEW)
    shot(page, "20-design-cluster")
    _view(page, "20-design-cluster", "#design-create")
    page.locator("#design-create").click()
    page.wait_for_function(
        "(n) => document.querySelector('#design-cluster-action')?.innerText"
        "?.includes(`Created '${n}'`)",
        arg=NEW,
    )
    assert f"{n - 1} utterance(s) labelled {NEW}" in page.inner_text("#design-cluster-action")

    page.get_by_role("tab", name="Merge / split what-if").click()
    page.get_by_label("Merge intent").click()
    page.get_by_role("option", name="cancel_order", exact=True).click()
    page.get_by_label("with intent").click()
    page.get_by_role("option", name="refund_status", exact=True).last.click()
    page.locator("#whatif-merge").click()
    page.wait_for_function(
        "() => document.querySelector('#whatif-result')?.innerText?.includes('estimated accuracy')"
    )
    text = page.inner_text("#whatif-result")
    assert "Merging cancel_order and refund_status" in text and "macro-F1" in text
    shot(page, "21-design-whatif")
    _view(page, "21-design-whatif", "#whatif-result")
