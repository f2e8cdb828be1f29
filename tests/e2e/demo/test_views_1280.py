"""The Data and Map tabs at 1280x720, and an import into a new project name (issue 47, items 4
and 7): Save and Delete fell below the fold after a row click; the Map showed 302 of its 722 px
(mostly title and margin) with intent names overlapping; after an import into a new name the
table and the summary showed the previous project for seconds.

Leaves a project of its own, ``views-fresh``, on the folder's shared server."""

from __future__ import annotations

import csv

import pytest

from tests.e2e.conftest import shot

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

DEMO = "Demo: Acme support"
FRESH = "views-fresh"

# Every distinct (summary, table line, first row, import message) the page shows, from now on.
RECORD = """() => {
  window.__seen = [];
  const text = (sel) => (document.querySelector(sel)?.innerText || '').trim();
  const note = () => {
    const row = [text('#project-summary'), text('#data-count'),
                 text('#utterance-table [data-testid=cell-0-1]'), text('#import-status')];
    const last = window.__seen[window.__seen.length - 1];
    if (!last || last.some((v, i) => v !== row[i])) window.__seen.push(row);
  };
  new MutationObserver(note).observe(document.body,
    {subtree: true, childList: true, characterData: true});
  note();
}"""

# The map's intent names as drawn: their boxes on the page.
NAME_BOXES = """() => { const p = document.querySelector('#map-plot .js-plotly-plot');
  const wanted = new Set((p.layout.annotations || []).map((a, i) => a.name === 'intent name' ? i : -1));
  return [...p.querySelectorAll('.annotation')].filter((g) => wanted.has(Number(g.dataset.index)))
  .map((g) => g.querySelector('text.annotation-text')).filter((t) => t && t.textContent)
  .map((t) => { const r = t.getBoundingClientRect();
  return [t.textContent, r.left, r.top, r.right, r.bottom]; }); }"""


@pytest.fixture
def small(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.set_default_timeout(120_000)
    yield page
    context.close()


def _in_view(page, selector: str) -> None:
    """``selector`` is wholly on screen and nothing covers its middle."""
    box = page.locator(selector).bounding_box()
    assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 720, (selector, box)
    hit = page.evaluate(
        "([s, x, y]) => document.elementFromPoint(x, y)?.closest(s) !== null",
        [selector, box["x"] + box["width"] / 2, box["y"] + box["height"] / 2],
    )
    assert hit, selector


def test_at_1280x720_a_clicked_rows_actions_and_the_whole_map_are_on_screen(server, small):
    page = small
    page.goto(server.url)
    page.get_by_role("tab", name="Data").click()
    page.wait_for_function(
        "() => document.querySelector('#data-count')?.innerText?.includes('Rows 1')"
    )
    page.locator("#utterance-table [data-testid=cell-0-1]").click()
    page.wait_for_function(
        "() => document.querySelector('#edit-panel')?.innerText?.includes('Utterance #')"
    )
    for button in ("#save-utterance", "#delete-utterance", "#undo"):
        _in_view(page, button)
    shot(page, "64-data-row-clicked-1280")

    page.get_by_role("tab", name="Map").click()
    page.wait_for_function(  # the projection asked for, not the quick picture before it
        "() => !(document.querySelector('#map-status')?.innerText || '').includes('quick PCA')"
        " && document.querySelector('#map-plot .js-plotly-plot')?._fullLayout?._size"
    )
    plot = page.evaluate(
        "() => { const r = document.querySelector('#map-plot .js-plotly-plot')"
        ".getBoundingClientRect(); return {y: r.top, height: r.height}; }"
    )
    assert plot["height"] > 0 and plot["y"] + plot["height"] <= 720, plot  # all of it
    area = page.evaluate(
        "() => document.querySelector('#map-plot .js-plotly-plot')._fullLayout._size.h"
    )
    assert area >= 0.85 * plot["height"], (area, plot)  # mostly points, not title and margin
    names = page.evaluate(NAME_BOXES)
    assert len(names) >= 5, names
    for i, (a, *p) in enumerate(names):
        for b, *q in names[i + 1 :]:
            apart = p[2] <= q[0] or q[2] <= p[0] or p[3] <= q[1] or q[3] <= p[1]
            assert apart, (a, b)
    assert page.evaluate("() => window.scrollY") == 0
    shot(page, "65-map-1280")


def test_an_import_into_a_new_name_never_shows_the_last_projects_rows_under_it(
    server, small, tmp_path
):
    src = tmp_path / "fresh.csv"
    with src.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label", "split"])
        for i in range(30):
            w.writerow([f"fresh question {i}", ["alpha", "beta"][i % 2], "train"])
    page = small
    page.goto(server.url)
    page.get_by_role("tab", name="Data").click()
    page.wait_for_function(
        "() => document.querySelector('#data-count')?.innerText?.includes('Rows 1')"
    )
    before = page.inner_text("#utterance-table [data-testid=cell-0-1]").strip()
    page.get_by_text("Import / export").click()
    page.set_input_files("#import-file input[type=file]", str(src))
    page.get_by_label("Into project", exact=False).fill(FRESH)
    page.evaluate(RECORD)
    page.locator("#import").click()
    page.wait_for_function(
        "(n) => document.querySelector('#utterance-table [data-testid=cell-0-1]')"
        "?.innerText?.includes('fresh question 0')",
        arg=FRESH,
    )
    page.wait_for_timeout(1500)  # the refreshes queued behind the import
    seen = page.evaluate("() => window.__seen")
    after = [row for row in seen if "Imported 30" in row[3]]
    assert after, seen
    for summary, line, first, _ in after:  # from the import's message on: the new project only
        assert FRESH in summary and DEMO not in summary, after
        assert first != before and "Rows 1–100 of" not in line, after
    assert "Rows 1–30 of 30" in after[-1][1], after
    shot(page, "66-imported-into-a-new-name-1280")
