"""The Data tab's one *Project settings* section in Chromium on the BANKING77 project: it shows
the project's values and what each does, saves changes typed at an annotator's speed (80 ms a
key) together, says what changed, and a new page shows what was stored. The project's settings
are put back at the end (the server is shared by the session). Screenshots at 1440x900 and
1280x720."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import SHOTS

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SIZES = ((1440, 900), (1280, 720))


def _open_settings(page, url: str) -> None:
    page.goto(url)
    page.get_by_role("tab", name="Data").click()
    page.get_by_text("Project settings").click()
    _says(page, "#settings-effects", "Anchors on")


def _says(page, selector: str, text: str, timeout: float = 120_000) -> None:
    page.wait_for_function(
        "([s, t]) => (document.querySelector(s)?.innerText || '').includes(t)",
        arg=[selector, text],
        timeout=timeout,
    )


def _checked(page, elem_id: str) -> bool:
    return page.locator(f"#{elem_id} input[type=checkbox]").is_checked()


def _set_number(page, elem_id: str, text: str) -> None:
    box = page.locator(f"#{elem_id} input[type=number]")
    box.click()
    page.keyboard.press("Control+A")
    page.keyboard.type(text, delay=80)
    box.blur()


def _save(page, expect: str) -> None:
    page.get_by_role("button", name="Save settings").click()
    _says(page, "#settings-status", expect)


def test_project_settings_show_save_together_and_a_new_page_shows_them(banking77_server, browser):
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.set_default_timeout(120_000)
    try:
        _open_settings(page, banking77_server.url)
        assert _checked(page, "set-oos-on") and _checked(page, "set-serve-int8")
        assert not _checked(page, "set-encode-context")
        assert page.locator("#set-anchor-weight input[type=number]").input_value() == "1"
        effects = page.inner_text("#settings-effects")
        assert "77 intent(s)" in effects and "Serving:" in effects
        # the calibration after a retrain: this CPU's default, and what held-out costs here
        auto = page.locator("#set-oos-calibration input[value='auto']")
        assert auto.is_checked()
        assert "Auto: quick on this CPU" in effects
        assert "Held-out would take about " in effects and "on this CPU" in effects
        assert "after each retrain's version serves" in effects
        SHOTS.mkdir(parents=True, exist_ok=True)
        for w, h in SIZES:
            page.set_viewport_size({"width": w, "height": h})
            page.locator("#project-settings").scroll_into_view_if_needed()
            page.screenshot(path=str(SHOTS / f"80-project-settings-{w}x{h}.png"))
        page.set_viewport_size({"width": 1440, "height": 900})

        _set_number(page, "set-anchor-weight", "2")
        page.locator("#set-oos-on input[type=checkbox]").uncheck()
        page.locator("#set-oos-calibration").get_by_text("held-out", exact=True).click()
        _save(
            page,
            "Changed oos_target_recall 0.95 → off; anchor_weight 1 → 2; oos_calibration auto → "
            "held-out.",
        )
        _says(page, "#settings-effects", "Held-out: after each retrain's version serves, 5 more")
        _says(page, "#settings-effects", "Out-of-scope detection is off")
        _says(page, "#settings-effects", "Anchors on (weight 2)")

        fresh = context.new_page()  # what a new page shows is what was stored
        _open_settings(fresh, banking77_server.url)
        assert not _checked(fresh, "set-oos-on")
        assert fresh.locator("#set-anchor-weight input[type=number]").input_value() == "2"
        assert fresh.locator("#set-oos-calibration input[value='held-out']").is_checked()
        fresh.close()

        _set_number(page, "set-anchor-weight", "1")
        page.locator("#set-oos-on input[type=checkbox]").check()
        page.locator("#set-oos-calibration").get_by_text("auto", exact=True).click()
        _save(
            page,
            "Changed oos_target_recall off → 0.95; anchor_weight 2 → 1; oos_calibration held-out "
            "→ auto.",
        )

        # The Design tab's out-of-scope view explains the decision and points here.
        page.get_by_role("tab", name="Design").click()
        page.get_by_role("tab", name="Out of scope").click()
        _says(page, "#oos-state", "Each intent keeps 95%")
        for w, h in SIZES:
            page.set_viewport_size({"width": w, "height": h})
            page.locator("#oos-state").scroll_into_view_if_needed()
            page.screenshot(path=str(SHOTS / f"81-design-out-of-scope-{w}x{h}.png"))
    finally:
        context.close()
