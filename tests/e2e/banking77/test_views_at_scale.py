"""The views at the sizes real assistants have: the Train tab's sections fit a 1280x720 screen on
BANKING77 (77 intents), a confused pair's utterance is relabelled from the evaluation view there,
and a synthetic project of 300 intents (1,500 utterances) gets a readable map: distinct colours,
names at the clusters, an intent isolated by search, a click answered on first render."""

from __future__ import annotations

import csv
import os
import subprocess
import sys

import pytest

from tests.e2e.conftest import emit_on_map, shot

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ACTIONS = [
    "cancel", "renew", "upgrade", "pause", "transfer", "report", "verify", "update", "close",
    "reset", "track", "refund", "replace", "activate", "block", "share", "export", "schedule",
    "split", "dispute",
]  # fmt: skip
OBJECTS = [
    "card", "loan", "mortgage", "pension", "insurance", "subscription", "parcel", "invoice",
    "password", "address", "account", "payment", "booking", "ticket", "voucher",
]  # fmt: skip
PROJECT_300 = "intents300"
PROJECT_FRESH = "banking77-untouched"
TEMPLATES = [
    "I want to {a} my {o}",
    "how do I {a} the {o}",
    "please {a} my {o} today",
    "can you help me {a} my {o}",
    "{a} {o} now",
]


def synthetic_300(out) -> None:
    """300 intents (20 actions x 15 objects), 4 train + 1 test utterances each."""
    with out.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label", "split"])
        for a in ACTIONS:
            for o in OBJECTS:
                for i, t in enumerate(TEMPLATES):
                    w.writerow([t.format(a=a, o=o), f"{a}_{o}", "test" if i == 4 else "train"])


@pytest.fixture(scope="module")
def server_300(banking77_server, tmp_path_factory):
    """The BANKING77 server with a second project, ``intents300``, imported while it runs (a
    server of its own would load the encoder and warm up again for one test)."""
    src = tmp_path_factory.mktemp("s300") / "300.csv"
    synthetic_300(src)
    subprocess.run(
        [sys.executable, "-m", "app", "import", str(src), "--project", PROJECT_300],
        env={**os.environ, "INTENT_STUDIO_DATA_DIR": str(banking77_server.data_dir)},
        check=True,
        capture_output=True,
    )
    return banking77_server


# The 300-intent map is drawn (not the BANKING77 map the page opened on) and takes clicks.
DRAWN_300 = (
    "() => { const p = document.querySelector('#map-plot .js-plotly-plot');"
    " return p?.on && p.data?.length >= 300; }"
)


UMAP_DRAWN = (
    "() => { const s = document.querySelector('#map-status')?.innerText || '';"
    " return s.includes('umap') && !s.includes('quick PCA'); }"
)


def _open(page, url: str, project: str) -> None:
    """Open the server's page on ``project`` (picked as a person picks it)."""
    page.goto(url)
    picker = page.locator("#project input")
    picker.click()
    picker.fill(project)
    page.get_by_role("option", name=project, exact=True).click()
    page.wait_for_function(
        "(p) => document.querySelector('#project-summary')?.innerText?.includes(p)", arg=project
    )


def _open_300(page, url: str) -> None:
    """Open the server's page on the 300-intent project and its Map tab."""
    _open(page, url, PROJECT_300)
    page.get_by_role("tab", name="Map").click()


def _sized(browser, width: int, height: int):
    ctx = browser.new_context(viewport={"width": width, "height": height})
    page = ctx.new_page()
    page.set_default_timeout(120_000)
    return ctx, page


def test_train_sections_fit_1280x720_and_a_confused_utterance_is_fixed_in_place(
    banking77_server, browser
):
    ctx, page = _sized(browser, 1280, 720)
    try:
        page.goto(banking77_server.url)
        page.get_by_role("tab", name="Train").click()
        for section in ("Retrain", "Versions", "Evaluation", "Export & share"):
            page.get_by_role("tab", name=section).click()
            if section == "Evaluation":
                page.locator("#evaluate").click()
                page.wait_for_function(
                    "() => document.querySelector('#eval-status')?.innerText?.includes('macro-F1')"
                )
                page.wait_for_selector("#worst [data-testid=cell-0-0]")
            height = page.evaluate("() => document.documentElement.scrollHeight")
            shot(page, f"60-train-{section.split()[0].lower()}-1280")
            assert height <= 720, (section, height)

        # the worst pair of 77 intents, its utterances, one relabelled right there
        page.get_by_role("tab", name="Evaluation").click()
        wrong = page.inner_text("#worst [data-testid=cell-0-1]").strip()
        page.locator("#worst [data-testid=cell-0-0]").click()
        page.wait_for_selector("#eval-rows [data-testid=cell-0-1]")
        page.locator("#eval-rows [data-testid=cell-0-1]").click()
        page.wait_for_function(
            "(w) => document.querySelector('#eval-picked')?.innerText?.includes('predicted ' + w)",
            arg=wrong,
        )
        page.locator("#eval-relabel-as input").click()  # empty: the designer picks (issue 25)
        page.keyboard.type(wrong, delay=80)
        page.keyboard.press("Enter")
        page.locator("#eval-confirm-test input").check()  # a test row: confirmed
        page.locator("#eval-relabel").click()
        page.wait_for_function(
            "(w) => document.querySelector('#eval-fix')?.innerText?.includes('relabelled as ' + w)",
            arg=wrong,
        )
        shot(page, "61-evaluation-fixed-1280")
    finally:
        ctx.close()


# Every text a Gradio status tracker shows over a panel while its event runs (a timer such as
# "processing | 0.6s" or "0.4s"), collected as it appears.
TIMERS = """() => {
  window.__timers = [];
  new MutationObserver(() => {
    document.querySelectorAll('[data-testid=status-tracker]').forEach((t) => {
      // what is drawn: the screen reader's live region (.sr-only, clipped) is not on screen
      const spoken = t.querySelector('.sr-only')?.innerText || '';
      const text = (t.innerText || '').replace(spoken, '').trim();
      if (/\\d+(\\.\\d+)?s\\b|processing/.test(text)) window.__timers.push(text);
    });
  }).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


def test_relabel_as_offers_every_intent_once_the_model_is_evaluated(banking77_server, browser):
    """Issue 58 item 1: "Relabel as" offered no intent: its callback handed the service the
    project's name where it takes the project, and the AttributeError became an empty list (a
    bug now fails any browser test: the server logs it, the page shows it)."""
    from tests.e2e.banking77.test_label_keys import _names

    ctx, page = _sized(browser, 1440, 900)
    try:
        page.goto(banking77_server.url)
        page.get_by_role("tab", name="Train").click()
        page.get_by_role("tab", name="Evaluation").click()
        page.evaluate(TIMERS)
        page.locator("#evaluate").click()
        page.wait_for_function(
            "() => document.querySelector('#eval-status')?.innerText?.includes('macro-F1')"
        )
        page.locator("#eval-relabel-as input").click()
        page.wait_for_function(
            "() => document.querySelectorAll('[role=listbox] [role=option]').length >= 77",
            timeout=30_000,
        )
        offered = page.evaluate(
            "() => [...document.querySelectorAll('[role=listbox] [role=option]')]"
            ".map((o) => o.innerText.trim())"
        )
        assert set(_names()) <= set(offered), sorted(set(_names()) - set(offered))[:5]
        page.keyboard.press("Escape")
        # issue 58 item 7: no Gradio run timer ("processing | 0.6s") over a panel meanwhile
        assert page.evaluate("() => window.__timers") == []
    finally:
        ctx.close()


def test_at_1280x720_the_data_tabs_save_and_most_of_the_map_show_without_scrolling(
    banking77_server, browser
):
    """Issue 25 item 9: Save sat below the fold and about 190 px of the map showed."""
    ctx, page = _sized(browser, 1280, 720)
    try:
        page.goto(banking77_server.url)
        page.get_by_role("tab", name="Data").click()
        page.wait_for_function(
            "() => document.querySelector('#data-count')?.innerText?.includes('Rows 1')"
        )
        save = page.locator("#save-utterance").bounding_box()
        assert save is not None and save["y"] + save["height"] <= 720, save
        shot(page, "62-data-1280")
        page.get_by_role("tab", name="Map").click()
        page.wait_for_selector("#map-plot .js-plotly-plot")
        plot = page.locator("#map-plot").bounding_box()
        assert plot is not None and 720 - plot["y"] >= 280, plot  # at least 280 px of the map
        assert page.evaluate("() => window.scrollY") == 0
        shot(page, "63-map-1280")
    finally:
        ctx.close()


# Each intent name the Map draws, as the browser lays it out: its text, its box (CSS px), its
# font size and text shadow, and whether it comes after the WebGL points in the page (drawn over
# them); the plot area's box.
MAP_NAMES = """() => {
  const p = document.querySelector('#map-plot .js-plotly-plot');
  const area = p.querySelector('.nsewdrag').getBoundingClientRect();
  const gl = p.querySelector('.gl-container');
  const wanted = new Set((p.layout.annotations || []).map((a, i) => a.name === 'intent name' ? i : -1));
  const names = [...p.querySelectorAll('.annotation')]
    .filter((g) => wanted.has(Number(g.dataset.index)))
    .map((g) => {
      const t = g.querySelector('text.annotation-text');
      const r = t.getBoundingClientRect();
      const css = getComputedStyle(t);
      return {text: t.textContent, box: [r.left, r.top, r.right, r.bottom],
              size: parseFloat(css.fontSize), shadow: css.textShadow,
              above: !!(gl.compareDocumentPosition(t) & Node.DOCUMENT_POSITION_FOLLOWING)};
    });
  const plot = p.getBoundingClientRect();
  return {names, area: [area.left, area.top, area.right, area.bottom],
          plot: [plot.top, plot.bottom], scrolled: window.scrollY};
}"""


@pytest.mark.parametrize("width,height", [(1440, 900), (1280, 720)])
def test_the_map_names_every_intent_readably_and_takes_most_of_the_screen(
    banking77_server, browser, width, height
):
    """Issue 58 item 2: the Map named 39 of BANKING77's 77 intents, each under a median of 53
    points, and at 1280x720 the plot was 322 px tall (45 % of the screen). As drawn in the
    browser: all 77 names, none overlapping another, each inside the plot area, over the WebGL
    points (after them in the page), 12 px or more with a white halo; the plot is 60 % of the
    screen's height or more, all of it on screen."""
    from tests.e2e.banking77.test_label_keys import _names

    ctx, page = _sized(browser, width, height)
    try:
        page.goto(banking77_server.url)
        page.get_by_role("tab", name="Map").click()
        page.wait_for_function(
            "() => { const s = document.querySelector('#map-status')?.innerText || '';"
            " return s.includes('umap') && !s.includes('quick PCA')"
            " && document.querySelector('#map-plot .js-plotly-plot .annotation'); }",
            timeout=300_000,
        )
        drawn = page.evaluate(MAP_NAMES)
        shot(page, f"65-map-names-{width}")
        names = drawn["names"]
        assert sorted(n["text"] for n in names) == _names()  # every intent, once
        assert all(n["above"] and n["size"] >= 12 for n in names), names[:3]
        assert all("rgb(255, 255, 255)" in n["shadow"] for n in names), names[0]["shadow"]
        x0, y0, x1, y1 = drawn["area"]
        for i, a in enumerate(names):
            (ax0, ay0, ax1, ay1) = a["box"]
            assert ax0 >= x0 - 1 and ay0 >= y0 - 1 and ax1 <= x1 + 1 and ay1 <= y1 + 1, a
            for b in names[i + 1 :]:
                (bx0, by0, bx1, by1) = b["box"]
                apart = ax1 <= bx0 + 0.5 or bx1 <= ax0 + 0.5 or ay1 <= by0 + 0.5 or by1 <= ay0 + 0.5
                assert apart, (a, b)
        top, bottom = drawn["plot"]
        assert drawn["scrolled"] == 0 and bottom <= height, drawn["plot"]
        assert bottom - top >= 0.6 * height, drawn["plot"]
    finally:
        ctx.close()


def _map_traces(page) -> dict[str, str]:
    return page.evaluate(
        "() => Object.fromEntries(document.querySelector('#map-plot .js-plotly-plot').data"
        ".filter((t) => t.mode === 'markers').map((t) => [t.name, t.marker.color]))"
    )


def test_a_map_of_300_intents_is_readable(server_300, browser):
    ctx, page = _sized(browser, 1440, 900)
    try:
        _open_300(page, server_300.url)
        page.wait_for_function(DRAWN_300, timeout=300_000)  # a quick PCA picture at first,
        page.wait_for_function(UMAP_DRAWN, timeout=300_000)  # replaced by UMAP when it lands
        colours = _map_traces(page)
        labelled = {k: c for k, c in colours.items() if not k.startswith("(")}
        assert len(labelled) == 300
        assert len(set(labelled.values())) >= 256  # glasbey's 256 distinct colours, all used
        shot(page, "62-map-300-intents")

        # a fresh page draws the cached map, and a click is answered without a Refresh
        _open_300(page, server_300.url)
        page.wait_for_function(DRAWN_300)
        first = page.evaluate(
            "() => document.querySelector('#map-plot .js-plotly-plot').data"
            ".find((d) => d.mode === 'markers' && d.customdata?.length).customdata[0]"
        )
        emit_on_map(page, "plotly_click", [first])
        page.wait_for_function(
            "() => document.querySelector('#map-explanation')?.innerText"
            "?.includes('Nearest labelled')"
        )
        search = page.locator("#map-focus input")
        search.click()
        search.fill("refund_parcel")
        page.keyboard.press("Enter")
        page.keyboard.press("Escape")
        page.wait_for_function(
            "() => { const d = document.querySelector('#map-plot .js-plotly-plot')?.data || [];"
            " const p = document.querySelector('#map-plot .js-plotly-plot');"
            " const n = (p?.layout?.annotations || []).filter((a) => a.name === 'intent name');"
            " return d.length && n.length === 1 && n[0].text === 'refund_parcel'; }"
        )
        isolated = _map_traces(page)
        assert {c for k, c in isolated.items() if k != "refund_parcel"} == {"#d9d9d9"}
        assert isolated["refund_parcel"] != "#d9d9d9"
        shot(page, "63-map-300-isolated")
    finally:
        ctx.close()
    ctx, page = _sized(browser, 1280, 720)
    try:
        _open_300(page, server_300.url)
        page.wait_for_function(DRAWN_300)
        shot(page, "64-map-300-1280")
    finally:
        ctx.close()


@pytest.fixture(scope="module")
def untouched_b77(banking77_server, tmp_path_factory):
    """The same BANKING77 rows as a second project nobody has labelled yet: the session's
    ``banking77`` has taken the earlier tests' labels and retrains, which move its out-of-scope
    threshold, and this test is about what the imported project decides."""
    from tests.conftest import SHARED_DATA
    from tests.e2e.conftest import banking77_csv

    src = banking77_csv(SHARED_DATA, tmp_path_factory.mktemp("b77fresh") / "b.csv")
    subprocess.run(
        [sys.executable, "-m", "app", "import", str(src), "--project", PROJECT_FRESH],
        env={**os.environ, "INTENT_STUDIO_DATA_DIR": str(banking77_server.data_dir)},
        check=True,
        capture_output=True,
    )
    return banking77_server


def test_the_weather_falls_back_to_no_intent_in_banking77_and_says_why(untouched_b77, page):
    _open(page, untouched_b77.url, PROJECT_FRESH)
    page.get_by_role("tab", name="Try").click()
    page.locator("#try-text textarea").fill("what's the weather like in Paris tomorrow?")
    page.locator("#try-predict").click()
    page.wait_for_function(  # the first answer embeds the new project's rows
        "() => document.querySelector('#try-explanation')?.innerText?.includes('out of scope')",
        timeout=240_000,
    )
    why = page.inner_text("#try-explanation")
    assert "No intent" in why and "threshold" in why
    shot(page, "65-try-out-of-scope")
