"""Issue 75 item 3 in Chromium on the BANKING77 project: one way to refuse. A refusal was a lone
"⚠" over a monospace block, plus a toast of the same text, and a name near no intent was told
"none is close", then three names that were not near. Keys at 80 and 30 ms each; screenshots at
1440x900 and 1280x720 (test-artifacts/screenshots/75-3-*)."""

from __future__ import annotations

import pytest

from tests.e2e.banking77.round6 import CARD, _page, _says, _shots
from tests.e2e.banking77.test_label_keys import _names
from tests.e2e.conftest import open_tab

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


# What the Data tab's status line shows: its text, and whether a code block or a line of its
# own holds the ⚠ (a lone "⚠" over a monospace block, before)
STATUS = """(s) => { const el = document.querySelector(s);
  return {text: el.innerText.trim(), blocks: el.querySelectorAll('pre, code').length,
          first: el.innerText.trim().split('\\n')[0]}; }"""


@pytest.mark.parametrize("delay", [80, 30])
def test_a_refusal_is_one_sentence_with_one_toast_and_names_only_near_intents(
    banking77_server, browser, delay
):
    """Item 3: a refusal was a lone "⚠" over a monospace block, plus a toast of the same text,
    and a name near no intent was told "none is close" and then three names that were not near.
    A name typed at ``delay`` ms a key, near none: one sentence after its ⚠, no code block, no
    name offered; one toast for the action at most (none for the Label tab's keys); a typo
    still offers the names near it."""
    names = _names()
    context, page = _page(browser)
    try:
        page.goto(banking77_server.url)
        page.wait_for_selector(CARD)
        page.locator("#queue-card").click()
        page.keyboard.type("zzqx wvvy", delay=delay)
        page.keyboard.press("Enter")
        said = _says(page, "#queue-status", "Unknown intent")
        shown = page.evaluate(STATUS, "#queue-status")
        assert shown["blocks"] == 0 and shown["first"].startswith("⚠ Unknown intent"), shown
        assert "No intent's name is close to it." in said and "Nothing was stored." in said
        assert not [n for n in names if f"'{n}'" in said], said  # no name that is not near
        assert page.evaluate("() => window.__toasts") == []  # a key's refusal: no toast
        _shots(page, "3-label-refusal", "#queue-status")
        page.keyboard.press("Escape")

        open_tab(page, "Data")
        page.get_by_text("Add an utterance").click()
        page.locator("#add-text textarea, #add-text input").first.fill("is there a gift card?")
        for typed, near in (("zzqx wvvy", None), ("card_arival", "card_arrival")):
            box = page.locator("#add-intents input").first
            box.click()
            for _ in range(3):  # the name typed before (its chip) taken away
                page.keyboard.press("Backspace")
            page.keyboard.type(typed, delay=delay)
            page.keyboard.press("Enter")
            before = len(page.evaluate("() => window.__toasts"))
            page.locator("#add-utterance").click()
            said = _says(page, "#data-status", f"Unknown intent '{typed}'")
            shown = page.evaluate(STATUS, "#data-status")
            assert shown["blocks"] == 0 and shown["first"].startswith("⚠ Unknown intent"), shown
            assert "Nothing was changed" in said
            if near is None:
                assert "No intent's name is close to it." in said, said
                assert not [n for n in names if f"'{n}'" in said], said
            else:
                assert f"Did you mean '{near}'" in said, said
            page.wait_for_timeout(1500)  # every toast of the action has come
            toasts = page.evaluate("() => window.__toasts")[before:]
            assert len(toasts) <= 1, toasts
            page.evaluate("() => document.querySelectorAll('.toast-close').forEach(b => b.click())")
        _shots(page, "3-data-refusal", "#data-status")
    finally:
        context.close()
