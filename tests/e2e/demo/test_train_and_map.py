"""The Train and Map tabs in a real browser: retrain in the background with live progress, the
new version in the history, evaluation views, the report, the before/after map, labelling from
the map and a point's explanation."""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import emit_on_map, open_tab, shot
from tests.e2e.demo.conftest import started_job, wait_for_job

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def text_of(page, selector: str) -> str:
    return page.locator(selector).inner_text()


def test_retrain_from_the_browser_then_evaluate_and_report(server, page):
    from gradio_client import Client

    # a test question with a wrong intent: the evaluation has a confusion to show whatever
    # the earlier modules on this server (tests/e2e/demo/conftest.py) taught the model
    Client(server.url, verbose=False).predict(
        "Demo: Acme support",
        "where has my parcel got to",
        ["refund_status"],
        "test",
        api_name="/label",
    )
    page.goto(server.url)
    open_tab(page, "Train")
    # the method by its name, and a line on what it is (issue 55)
    method = page.locator("#train-method")
    assert method.locator("input").input_value() == "ConvFiT Stage 2 · in-batch ranking (default)"
    assert (
        "ConvFiT Stage 2: contrastive task-tuning of the sentence encoder; in-batch ranking loss"
        in page.locator("#method-line").inner_text()
    )
    page.get_by_label("Advanced settings (optional)").fill("epochs=1, batch_size=16")
    page.locator("#retrain").click()
    job = started_job(page)
    wait_for_job(page, job, "running", "succeeded", timeout=120_000)
    shot(page, "10-train-running")
    wait_for_job(page, job, "succeeded")
    assert "accuracy" in text_of(page, "#job-progress")
    assert "queued" not in text_of(page, "#train-message")  # the job's line cleared when done
    open_tab(page, "Versions")
    page.wait_for_function(
        "() => document.querySelector('#versions')?.innerText?.includes('ConvFiT Stage 2')"
    )
    shot(page, "11-train-done")

    open_tab(page, "Evaluation")
    page.locator("#evaluate").click()
    page.wait_for_function(
        "() => document.querySelector('#eval-status')?.innerText?.includes('macro-F1')"
    )
    # A confused pair leads to its test utterances, and one is relabelled right there.
    page.wait_for_selector("#worst [data-testid=cell-0-0]")
    gold = page.inner_text("#worst [data-testid=cell-0-0]").strip()
    wrong = page.inner_text("#worst [data-testid=cell-0-1]").strip()
    page.locator("#worst [data-testid=cell-0-0]").click()
    page.wait_for_selector("#eval-rows [data-testid=cell-0-1]")
    page.locator("#eval-rows [data-testid=cell-0-1]").click()
    page.wait_for_function(
        "(w) => document.querySelector('#eval-picked')?.innerText?.includes('predicted ' + w)",
        arg=wrong,
    )
    # "Relabel as" starts empty and a test row changes only once confirmed (issue 25)
    page.locator("#eval-relabel-as input").click()
    page.keyboard.type(wrong, delay=80)
    page.keyboard.press("Enter")
    page.locator("#eval-confirm-test input").check()
    page.locator("#eval-relabel").click()
    page.wait_for_function(
        "(w) => document.querySelector('#eval-fix')?.innerText?.includes('relabelled as ' + w)",
        arg=wrong,
    )
    assert gold != wrong
    page.get_by_text("Charts: F1 bars and the confusion heatmap").click()
    page.wait_for_selector("#eval-f1 .js-plotly-plot")
    page.wait_for_selector("#eval-confusion .js-plotly-plot")
    shot(page, "12-evaluation")

    open_tab(page, "Export & share")
    page.locator("#report").click()
    page.wait_for_function(
        "() => document.querySelector('#export-status')?.innerText?.includes('Report written')",
        timeout=120_000,
    )
    assert ".html" in text_of(page, "#report-file")


def test_map_compares_encoders_and_labels_from_a_selection(server, page):
    page.goto(server.url)
    open_tab(page, "Map")
    page.get_by_label("Projection").click()
    page.get_by_role("option", name="pca").click()
    page.get_by_label("View").click()  # a picker since issue 58: one row of controls
    page.get_by_role("option", name="compare two versions").click()
    page.wait_for_function(
        "() => document.querySelector('#map-plot')?.innerText?.includes('frozen minilm')",
        timeout=180_000,
    )
    titles = text_of(page, "#map-plot")
    # the version this module trained (ids are global: an earlier module may have trained too)
    assert re.search(r"\bv\d+ \(ConvFiT Stage 2\)", titles) and titles.count("silhouette") == 2
    # every utterance is a point, once per side
    n_points = page.evaluate(
        "() => document.querySelector('#map-plot .js-plotly-plot').data"
        ".reduce((n, t) => n + (t.customdata ? t.customdata.length : 0), 0)"
    )
    expected = int(text_of(page, "#map-status").split()[0])
    assert n_points == 2 * expected
    # the map diff: every labelled intent, how much tighter / further apart it moved
    page.wait_for_selector("#map-diff table")
    diff = text_of(page, "#map-diff")
    assert "track_order" in diff and "→" in diff
    shot(page, "13-map-compare")

    # Click a point: plotly's click event carries its id to the explanation.
    emit_on_map(page, "plotly_click", [1])
    page.wait_for_function(
        "() => document.querySelector('#map-explanation')?.innerText?.includes('Nearest labelled')"
    )
    assert "Predicted" in text_of(page, "#map-explanation")

    # Lasso: plotly's selection event fills the selection; then move it to the test split.
    emit_on_map(page, "plotly_selected", [1, 2])
    page.wait_for_function(
        "() => document.querySelector('#map-selected textarea, #map-selected input')"
        "?.value === '1,2'"
    )
    page.locator("#map-move").click()
    page.wait_for_function(
        "() => document.querySelector('#map-action')?.innerText?.includes('Moved 2')"
    )
    shot(page, "14-map-after-move")
