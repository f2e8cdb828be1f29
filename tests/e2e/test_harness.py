"""The browser harness itself: what a user would see go wrong (an error toast, an uncaught page
error, a console error) is recorded for every page, however the test opened it, so the autouse
guard in conftest.py fails the test that saw it."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import PROBLEMS

pytestmark = [pytest.mark.e2e]

# The markup Gradio 6 gives a toast (statustracker: `toast-body ${type}`), added after load as
# Gradio adds it.
ADD_TOAST = """(kind) => {
  const wrap = document.createElement('div');
  wrap.className = 'toast-wrap';
  wrap.innerHTML = `<div class="toast-body ${kind}"><div class="toast-title">Error</div>
    <div class="toast-text">A function (tick) didn't return enough output values</div></div>`;
  document.body.appendChild(wrap);
}"""


@pytest.mark.parametrize("opened_with", ["new_page", "new_context"])
def test_error_toasts_page_errors_and_console_errors_are_all_seen(browser, opened_with):
    page = browser.new_page() if opened_with == "new_page" else browser.new_context().new_page()
    try:
        page.goto("data:text/html,<html><body><p>an app</p></body></html>")
        page.evaluate(ADD_TOAST, "warning")  # a refusal of bad input: the app's own message
        page.evaluate(ADD_TOAST, "error")
        page.evaluate("() => setTimeout(() => { throw new Error('boom in a handler'); })")
        page.evaluate("() => console.error('a failed request')")
        page.wait_for_timeout(300)
    finally:
        page.close()
    seen = PROBLEMS.take()  # taken here, so this test itself passes
    assert len(seen) == 3, seen
    assert any("[error toast]" in s and "enough output values" in s for s in seen)
    assert any(s.startswith("page error") and "boom in a handler" in s for s in seen)
    assert any(s.startswith("console error") and "a failed request" in s for s in seen)
    assert not any("warning" in s for s in seen)
