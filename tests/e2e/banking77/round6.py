"""What the browser tests of issue 75 (the designer's round 6) share on the BANKING77 folder's
server: a page that records its toasts, screenshots at both sizes, a wait for a text, REST."""

from __future__ import annotations

import json
import urllib.request
from urllib.parse import quote

from tests.e2e.banking77.test_label_keys import TOASTS
from tests.e2e.conftest import SHOTS

PROJECT = "banking77"
SIZES = ((1440, 900), (1280, 720))
CARD = "#queue-card [data-item]:not([data-item='none'])"


def _page(browser, width: int = 1280, height: int = 720, *scripts: str):
    """A page of its own context watching its toasts (``window.__toasts``), and ``scripts`` run
    before the app's own."""
    context = browser.new_context(viewport={"width": width, "height": height})
    for script in (TOASTS, *scripts):
        context.add_init_script(script)
    page = context.new_page()
    page.set_default_timeout(120_000)
    return context, page


def _shots(page, name: str, selector: str | None = None) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    size = page.viewport_size
    for w, h in SIZES:
        page.set_viewport_size({"width": w, "height": h})
        if selector:
            page.locator(selector).scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        page.screenshot(path=str(SHOTS / f"75-{name}-{w}x{h}.png"))
    page.set_viewport_size(size)


def _says(page, selector: str, text: str, timeout: float = 120_000) -> str:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(
            "([s, t]) => (document.querySelector(s)?.innerText || '').includes(t)",
            arg=[selector, text],
            timeout=timeout,
        )
    except PlaywrightTimeout:  # say what the page showed instead
        shown = page.evaluate("(s) => document.querySelector(s)?.innerText", selector)
        raise AssertionError(f"{selector} never said {text!r}; it says {shown!r}") from None
    return str(page.inner_text(selector))


def _rest(server, method: str, path: str, body: dict | None = None) -> dict:
    url = f"{server.url}api/v1/projects/{quote(PROJECT)}{path}"
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())
