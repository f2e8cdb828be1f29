from __future__ import annotations

import pytest

from tests.e2e.conftest import shot

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_data_tab_lists_the_demo_project_and_filters(server, page):
    page.goto(server.url)
    page.get_by_role("tab", name="Data").click()
    page.wait_for_function(
        "() => document.querySelector('#utterance-table')?.innerText?.includes('track_order')"
    )
    assert page.locator("#project input").input_value() == "Demo: Acme support"
    page.get_by_label("Text contains").fill("password")
    page.get_by_label("Text contains").press("Enter")
    page.wait_for_function(
        "() => { const t = document.querySelector('#utterance-table').innerText;"
        " return t.includes('how do i reset my password') && !t.includes('where is my order?'); }"
    )
    shot(page, "01-data-tab")


def test_try_tab_explains_and_a_new_label_counts_at_once(server, page):
    page.goto(server.url)
    page.get_by_role("tab", name="Try").click()
    box = page.locator("#try-text textarea")
    box.fill("can I get a voucher for the cinema")
    page.locator("#try-predict").click()
    explanation = page.locator("#try-explanation")
    page.wait_for_function(
        "() => document.querySelector('#try-explanation')?.innerText?.includes('Predicted')"
    )
    shown = explanation.inner_text()  # both parts of the deciding score: an example and a centre
    assert "because its examples are the closest: its nearest example" in shown
    assert "the centre of its" in shown
    neighbours = page.locator("#try-neighbours").inner_text()
    assert neighbours.count("0.") >= 3  # at least three similarities shown
    shot(page, "02-try-tab")

    # label it as a brand-new intent from the Try tab: a name the project does not have is
    # refused with the nearest (issue 65: a typo made an intent); created in the Data tab's
    # Intents first, the next prediction uses it at once
    label_input = page.locator("#try-label-as input")
    label_input.click()
    label_input.press("Backspace")  # drop the pre-filled predicted intent
    label_input.fill("gift_cards")
    label_input.press("Enter")
    label_input.press("Escape")
    page.locator("#try-label").click()
    page.wait_for_function(
        "() => (document.querySelector('#try-label-status')?.innerText || '')"
        ".includes(\"Unknown intent 'gift_cards'\")"
    )
    page.get_by_role("tab", name="Data").click()
    page.locator("#intents-accordion .label-wrap").click()
    page.get_by_label("New intent name").fill("gift_cards")
    page.get_by_role("button", name="Create", exact=True).click()
    page.wait_for_function(
        "() => (document.querySelector('#intent-status')?.innerText || '')"
        ".includes(\"Created intent 'gift_cards'\")"
    )
    page.get_by_role("tab", name="Try").click()
    page.locator("#try-label").click()
    page.wait_for_function(
        "() => document.querySelector('#try-explanation')?.innerText?.includes('Predicted gift_cards')"
    )
    shot(page, "03-try-after-labelling")
    # a second example: the modules after this one retrain the demo on the same server
    # (tests/e2e/demo/conftest.py), and a retrain needs two examples of every intent
    from gradio_client import Client

    Client(server.url, verbose=False).predict(
        "Demo: Acme support",
        "a gift card for my sister please",
        ["gift_cards"],
        "train",
        api_name="/label",
    )


def test_predict_api_answers_like_the_ui(server):
    from gradio_client import Client

    client = Client(server.url, verbose=False)
    assert "Demo: Acme support" in client.predict(api_name="/projects")
    result = client.predict("Demo: Acme support", "where is my parcel", 1, api_name="/predict")
    assert result["top"] == "track_order"
    assert result["neighbours"][0]["labels"]


def test_html_in_utterances_renders_as_text(server, page):
    from gradio_client import Client

    hostile = '<img src=x onerror="window.__xss=1">refund <script>window.__xss=2</script>'
    Client(server.url, verbose=False).predict(
        "Demo: Acme support", hostile, ["refund_status"], "train", api_name="/label"
    )
    page.goto(server.url)
    page.get_by_role("tab", name="Data").click()
    # the project's table first: a filter typed before the project has loaded is overwritten
    page.wait_for_function(
        "() => document.querySelector('#utterance-table')?.innerText?.includes('track_order')"
    )
    page.get_by_label("Text contains").fill("onerror")
    page.get_by_label("Text contains").press("Enter")
    page.wait_for_function(
        "() => document.querySelector('#utterance-table')?.innerText?.includes('onerror=')"
    )
    page.get_by_role("tab", name="Try").click()
    page.locator("#try-text textarea").fill(hostile)
    page.locator("#try-predict").click()
    page.wait_for_function(
        "() => document.querySelector('#try-explanation')?.innerText?.includes('<img src=x')"
    )
    assert page.evaluate("() => window.__xss") is None
    assert page.locator("#try-explanation img").count() == 0
    shot(page, "04-html-is-text")


def test_ten_concurrent_api_labels_all_land_without_raw_sql(server):
    """Red-team row 10: 8 of 10 concurrent API relabels failed with "database is locked"."""
    from concurrent.futures import ThreadPoolExecutor

    from gradio_client import Client

    clients = [Client(server.url, verbose=False) for _ in range(10)]
    project = "Demo: Acme support"

    def label(i: int) -> str:
        try:  # five relabel one text (the last one wins), five add their own
            text = "where is my parcel right now" if i % 2 else f"gift card number {i}"
            row = clients[i].predict(project, text, ["track_order"], "train", api_name="/label")
            return str(row["labels"])
        except Exception as exc:  # what the user would see
            return f"error: {exc}"

    with ThreadPoolExecutor(10) as pool:
        answers = list(pool.map(label, range(10)))
    assert all(a == "['track_order']" for a in answers), answers
    texts = {r["text"] for r in clients[0].predict(project, "", "", "", api_name="/utterances")}
    assert {f"gift card number {i}" for i in range(0, 10, 2)} <= texts
