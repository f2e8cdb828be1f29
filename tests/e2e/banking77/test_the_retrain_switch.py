"""Issue 75 item 1 in Chromium on the BANKING77 project: the automatic retrain's switch where the
designer sees the retrains. It was the Data tab's fourth closed accordion, below a 100-row table;
nothing on the Label tab's "improving…" line or in the Train tab led there, and a change said its
internal key ("Changed auto_retrain on → off"). Keys at 80 and 30 ms each; screenshots at
1440x900 and 1280x720 (test-artifacts/screenshots/75-1-*)."""

from __future__ import annotations

import pytest

from tests.e2e.banking77.round6 import _page, _rest, _says, _shots
from tests.e2e.conftest import open_tab

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SWITCH_ON = "Retrain by itself after 20 new labels: on"
# what the Label line and REST say of it in the suite's deployment (INTENT_STUDIO_AUTO_RETRAIN=off)
SWITCH_ON_HERE = f"{SWITCH_ON} (but off for this deployment)"
SWITCH = "#train-auto-retrain input[type=checkbox]"


def _in_view(page, selector: str) -> bool:
    return bool(
        page.evaluate(
            "(s) => { const b = document.querySelector(s)?.getBoundingClientRect();"
            " return !!b && b.height > 0 && b.top >= 0 && b.bottom <= innerHeight; }",
            selector,
        )
    )


def _tick(page, on: bool, said: str) -> None:
    """Switch it as a click does, until the page says ``said``: a click that lands while the
    Train tab's own look at the project (on opening it) is on its way is drawn over by it."""
    for _ in range(4):
        if page.locator(SWITCH).is_checked() != on:
            page.locator(SWITCH).click()
        try:
            _says(page, "#train-auto-status", said, timeout=10_000)
            return
        except AssertionError:
            continue
    _says(page, "#train-auto-status", said, timeout=1)


def test_the_automatic_retrains_switch_is_where_the_retrains_show(banking77_server, browser):
    """Item 1: the switch was the Data tab's fourth closed accordion, below a 100-row table;
    nothing on the Label tab's line or in the Train tab led there, and a change said "Changed
    auto_retrain on → off". The Label tab's model line says the switch in words and links to it;
    the link opens the Train tab with the switch and its threshold on screen; a change there (a
    tick, a threshold typed at 80 then 30 ms a key) is saved at once and said in words, and the
    Label tab's line follows."""
    context, page = _page(browser)
    try:
        page.goto(banking77_server.url)
        link = "#queue-model .queue-model-switch"
        assert _says(page, link, SWITCH_ON_HERE).strip() == SWITCH_ON_HERE
        _shots(page, "1-label-line")
        page.locator(link).click()
        page.wait_for_function(
            "() => document.querySelector('#train-auto-retrain')?.offsetParent !== null"
        )
        page.wait_for_timeout(500)  # the link's scroll
        assert _in_view(page, "#train-auto-retrain") and _in_view(page, "#train-auto-after")
        assert page.locator(SWITCH).is_checked()
        assert page.locator("#train-auto-after input").input_value() == "20"
        # the suite's servers run with INTENT_STUDIO_AUTO_RETRAIN=off: the line says that, not
        # the project's "On: …" (which no worker would act on)
        assert "project's switch (on)" in _says(page, "#train-auto-line", "Off for this deployment")
        _shots(page, "1-train-switch", "#train-auto")

        _tick(page, False, "Retrain by itself after 20 new labels: off (was on).")
        _says(page, "#train-auto-line", "project's switch (off)")
        for threshold, delay, said in (
            ("30", 80, "Retrain by itself after 30 new labels (was 20): off."),
            ("20", 30, "Retrain by itself after 20 new labels (was 30): off."),
        ):
            box = page.locator("#train-auto-after input")
            box.click()
            page.keyboard.press("Control+a")
            page.keyboard.type(threshold, delay=delay)
            page.keyboard.press("Enter")
            _says(page, "#train-auto-status", said)
        assert _rest(banking77_server, "GET", "/settings")["auto_retrain"].endswith(": off")
        open_tab(page, "Label")  # the line follows the switch (its look every 5 s)
        _says(page, link, "Retrain by itself after 20 new labels: off", timeout=30_000)
        page.locator(link).click()
        page.wait_for_function(
            "() => document.querySelector('#train-auto-retrain')?.offsetParent !== null"
        )
        _tick(page, True, "Retrain by itself after 20 new labels: on (was off).")
        assert _rest(banking77_server, "GET", "/settings")["auto_retrain"] == SWITCH_ON_HERE
    finally:
        _rest(banking77_server, "PUT", "/settings", {"set": {"auto_retrain": "on"}})
        _rest(banking77_server, "PUT", "/settings", {"set": {"auto_retrain_after": "20"}})
        context.close()
