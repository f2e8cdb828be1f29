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
    serving_state = browser.new_context(viewport={"width": width, "height": height})
    page = serving_state.new_page()
    page.set_default_timeout(120_000)
    return serving_state, page


def test_train_sections_fit_1280x720_and_a_confused_utterance_is_fixed_in_place(
    banking77_server, browser
):
    serving_state, page = _sized(browser, 1280, 720)
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
        serving_state.close()


# Every text a Gradio status tracker shows over a panel while its event runs (a timer such as
# "processing | 0.6s" or "0.4s"), collected as it appears.
TIMERS = """() => {
  window.__timers = [];
  new MutationObserver(() => {
    document.querySelectorAll('[data-testid=status-tracker]').forEach((t) => {
      // what is drawn: a tracker Gradio hides (an event's show_progress="hidden"), one in a tab
      // not shown, and the screen reader's live region (.sr-only, clipped) are not on screen
      if (t.classList.contains('hide') || t.offsetParent === null) return;
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

    serving_state, page = _sized(browser, 1440, 900)
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
        serving_state.close()


def test_at_1280x720_the_data_tabs_save_and_most_of_the_map_show_without_scrolling(
    banking77_server, browser
):
    """Issue 25 item 9: Save sat below the fold and about 190 px of the map showed."""
    serving_state, page = _sized(browser, 1280, 720)
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
        serving_state.close()


# Each intent name the Map draws, as the browser lays it out: its text, its box (CSS px), its
# font size and text shadow, whether it comes after the WebGL points in the page (drawn over
# them), its line back to its intent's centre (the drawn path's ends, or null) and that centre;
# every intent's centre the names were kept near (layout.meta), the plot area's box, and what
# size the names were placed for against the figure's size now.
MAP_NAMES = """() => {
  const p = document.querySelector('#map-plot .js-plotly-plot');
  const fl = p._fullLayout, xa = fl.xaxis, ya = fl.yaxis;
  const r = p.getBoundingClientRect();
  const px = (x, y) => [r.left + xa._offset + xa.d2p(x), r.top + ya._offset + ya.d2p(y)];
  const area = p.querySelector('.nsewdrag').getBoundingClientRect();
  const gl = p.querySelector('.gl-container');
  const groups = {};
  p.querySelectorAll('.annotation').forEach((g) => { groups[Number(g.dataset.index)] = g; });
  const names = [];
  (p.layout.annotations || []).forEach((a, i) => {
    const t = a.name === 'intent name' && groups[i]?.querySelector('text.annotation-text');
    if (!t) return;
    const b = t.getBoundingClientRect();
    const css = getComputedStyle(t);
    const path = groups[i].querySelector('.annotation-arrow-g path');
    let line = null;
    if (a.showarrow && path) {
      const m = path.getScreenCTM(), L = path.getTotalLength();
      const at = (q) => [m.a * q.x + m.c * q.y + m.e, m.b * q.x + m.d * q.y + m.f];
      line = [at(path.getPointAtLength(0)), at(path.getPointAtLength(L))];
    }
    names.push({text: t.textContent, key: a.text, box: [b.left, b.top, b.right, b.bottom],
                size: parseFloat(css.fontSize), shadow: css.textShadow, centre: px(a.x, a.y),
                above: !!(gl.compareDocumentPosition(t) & Node.DOCUMENT_POSITION_FOLLOWING), line});
  });
  const meta = p.layout.meta || {};
  const centres = Object.entries(meta.centres || {}).map(([k, v]) => [k, px(v[0], v[1])]);
  const host = document.querySelector('#map-plot [data-testid="plotly"]');
  const plot = p.getBoundingClientRect();
  return {names, centres, hidden: meta.names_hidden || [], placed_for: meta.placed_for,
          size: Math.round(host.clientWidth) + 'x' + Math.round(host.clientHeight),
          area: [area.left, area.top, area.right, area.bottom], plot: [plot.top, plot.bottom],
          scrolled: window.scrollY, status: document.querySelector('#map-status')?.innerText};
}"""
# The map drawn for the size it has on the page (the page's first map is drawn again for it).
PLACED = (
    "() => { const p = document.querySelector('#map-plot .js-plotly-plot');"
    " const h = document.querySelector('#map-plot [data-testid=plotly]');"
    " const s = document.querySelector('#map-status')?.innerText || '';"
    " return p && h && s.includes('umap') && !s.includes('quick PCA')"
    " && p.layout.meta?.placed_for"
    " === Math.round(h.clientWidth) + 'x' + Math.round(h.clientHeight)"
    " && p.querySelector('.annotation'); }"
)


def _crosses(line, box) -> bool:
    """Whether the segment ``line`` runs through ``box`` (shrunk by a pixel), Liang-Barsky."""
    (x0, y0), (x1, y1) = line
    t0, t1 = 0.0, 1.0
    dx, dy = x1 - x0, y1 - y0
    for p, q in (
        (-dx, x0 - (box[0] + 1)),
        (dx, (box[2] - 1) - x0),
        (-dy, y0 - (box[1] + 1)),
        (dy, (box[3] - 1) - y0),
    ):
        if p == 0:
            if q < 0:
                return False
            continue
        t = q / p
        if p < 0:
            t0 = max(t0, t)
        else:
            t1 = min(t1, t)
        if t0 > t1:
            return False
    return True


def _box_distance(box, point) -> float:
    dx = max(box[0] - point[0], 0, point[0] - box[2])
    dy = max(box[1] - point[1], 0, point[1] - box[3])
    return float((dx * dx + dy * dy) ** 0.5)


def _name_numbers(drawn) -> dict:
    """Issue 65's numbers of the names drawn: lines through another name, the median and
    longest line (px), names not nearer their own intent's centre than any other's."""
    names = drawn["names"]
    centres = dict(drawn["centres"])
    lengths, crossing, far = [], [], []
    for n in names:
        if n["line"]:
            (x0, y0), (x1, y1) = n["line"]
            lengths.append(((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5)
            if any(_crosses(n["line"], o["box"]) for o in names if o is not n):
                crossing.append(n["text"])
        own = _box_distance(n["box"], centres[n["key"]])  # keyed as the annotation's text
        if any(_box_distance(n["box"], c) <= own for k, c in centres.items() if k != n["key"]):
            far.append(n["text"])
    lengths.sort()
    median = lengths[(len(lengths) - 1) // 2] if lengths else 0.0
    return {
        "shown": len(names),
        "hidden": len(drawn["hidden"]),
        "lines": len(lengths),
        "through_another_name": crossing,
        "median_line_px": round(median, 1),
        "longest_line_px": round(lengths[-1], 1) if lengths else 0.0,
        "not_nearest_their_own": far,
    }


@pytest.mark.parametrize("width,height", [(1440, 900), (1280, 720)])
def test_the_map_puts_each_name_at_its_own_cluster_and_takes_most_of_the_screen(
    banking77_server, browser, width, height
):
    """Issue 65 item 3 (issue 58 item 2 before it): 73 of 77 names hung on leader lines, 34 of
    them (1280x720) and 32 (1440x900) through another name, some 350-460 px long, so a name's
    cluster was unclear without hovering. As drawn in the browser, placed for the size the map
    has: no line through another name, the median line 20 px or shorter, every name nearer its
    own intent's centre than any other intent's; each name once, none overlapping another,
    inside the plot, over the WebGL points, 12 px or more with a white halo; the names that
    found no place are said in the status line, and a zoom into the map names more of them.
    The plot is 60 % of the screen's height or more, all of it on screen."""
    from tests.e2e.banking77.test_label_keys import _names

    serving_state, page = _sized(browser, width, height)
    try:
        page.goto(banking77_server.url)
        page.get_by_role("tab", name="Map").click()
        page.wait_for_function(PLACED, timeout=300_000)
        drawn = page.evaluate(MAP_NAMES)
        shot(page, f"65-map-names-{width}")
        names = drawn["names"]
        numbers = _name_numbers(drawn)
        print(f"\n{width}x{height}: {numbers}")
        shown = sorted(n["text"] for n in names)
        assert sorted([*shown, *drawn["hidden"]]) == _names()  # every intent, once
        assert numbers["through_another_name"] == [], numbers
        assert numbers["median_line_px"] <= 20, numbers
        assert numbers["not_nearest_their_own"] == [], numbers
        if drawn["hidden"]:
            assert f"{len(drawn['hidden'])} of 77 names hidden" in drawn["status"], drawn["status"]
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

        # a zoom into the middle of the map names what fits there, by the same rules
        hidden = set(drawn["hidden"])
        page.evaluate(  # as a box zoom tells it (plotly_relayout), to the middle quarter
            "() => { const p = document.querySelector('#map-plot .js-plotly-plot');"
            " const [x0, x1] = p.layout.xaxis.range, [y0, y1] = p.layout.yaxis.range;"
            " const cx = (x0 + x1) / 2, cy = (y0 + y1) / 2, w = (x1 - x0) / 4, h = (y1 - y0) / 4;"
            " p.emit('plotly_relayout', {'xaxis.range[0]': cx - w, 'xaxis.range[1]': cx + w,"
            " 'yaxis.range[0]': cy - h, 'yaxis.range[1]': cy + h}); }"
        )
        page.wait_for_function(
            "() => (document.querySelector('#map-plot .js-plotly-plot')?.layout?.meta?.zoom"
            " || '') !== ''"
        )
        page.wait_for_function(PLACED)
        zoomed = page.evaluate(MAP_NAMES)
        shot(page, f"65-map-names-zoomed-{width}")
        again = _name_numbers(zoomed)
        assert again["through_another_name"] == [] and again["not_nearest_their_own"] == []
        if hidden:
            assert hidden & {n["text"] for n in zoomed["names"]}, (hidden, again)
    finally:
        serving_state.close()


def _map_traces(page) -> dict[str, str]:
    return page.evaluate(
        "() => Object.fromEntries(document.querySelector('#map-plot .js-plotly-plot').data"
        ".filter((t) => t.mode === 'markers').map((t) => [t.name, t.marker.color]))"
    )


def test_a_map_of_300_intents_is_readable(server_300, browser):
    serving_state, page = _sized(browser, 1440, 900)
    try:
        _open_300(page, server_300.url)
        page.wait_for_function(DRAWN_300, timeout=300_000)  # a quick PCA picture at first,
        page.wait_for_function(UMAP_DRAWN, timeout=300_000)  # replaced by UMAP when it lands
        colours = _map_traces(page)
        labelled = {k: c for k, c in colours.items() if not k.startswith("(")}
        assert len(labelled) == 300
        assert len(set(labelled.values())) >= 256  # glasbey's 256 distinct colours, all used
        shot(page, "62-map-300-intents")

        # a fresh page draws the cached map, and a click is answered without a Refresh (a new
        # page: the first one sent away would abort its open event stream, an error toast, when
        # its map is still being drawn again for its size)
        page = serving_state.new_page()
        page.set_default_timeout(120_000)
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
        serving_state.close()
    serving_state, page = _sized(browser, 1280, 720)
    try:
        _open_300(page, server_300.url)
        page.wait_for_function(DRAWN_300)
        shot(page, "64-map-300-1280")
    finally:
        serving_state.close()


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
