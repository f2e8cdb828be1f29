"""The Label tab's first card, as a newcomer meets it on the demo (issue 65).

Item 2: the card said "Nothing left to label in this order" while the first card loaded (117 s
on a busy server, and again after Start / reorder): it was the card's first HTML. Every text
the card shows from the page's load to the first card, and from a Start / reorder to the card
it brings, is recorded as it appears: it says it is loading, never that nothing is left."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# Every text the card shows, in order, from the page's first paint (an init script).
CARD_TEXTS = """(() => {
  window.__cards = [];
  const note = () => {
    const c = document.querySelector('#queue-card [data-item]');
    const t = c ? c.innerText.trim() : null;
    if (t && window.__cards[window.__cards.length - 1] !== t) window.__cards.push(t);
  };
  new MutationObserver(note).observe(document, {subtree: true, childList: true,
                                                characterData: true, attributes: true});
})();"""
CARD = "() => document.querySelector('#queue-card [data-item]:not([data-item=none])')"


def test_the_card_says_it_is_loading_never_that_nothing_is_left(server, browser):
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    context.add_init_script(CARD_TEXTS)
    page = context.new_page()
    page.set_default_timeout(120_000)
    try:
        page.goto(server.url)
        page.wait_for_function(CARD)
        seen = page.evaluate("() => window.__cards")
        assert seen and "Loading" in seen[0], seen
        assert not any("Nothing left" in t for t in seen), seen
        page.evaluate("() => { window.__cards = []; }")
        page.locator("#queue-start").click()
        page.wait_for_function(
            "() => window.__cards.length >= 2 && document.querySelector("
            "'#queue-card [data-item]:not([data-item=none])')"
        )
        seen = page.evaluate("() => window.__cards")
        assert "Loading" in seen[0] and not any("Nothing left" in t for t in seen), seen
    finally:
        context.close()
