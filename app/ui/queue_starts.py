"""Which start of the Label tab's queue is a page's newest: a start answered after a newer one of
the same page (the page load's own, still on its way when the person picked an order and pressed
Start) leaves the page as the newer one made it, instead of replacing its cards.

Each start is numbered by the page when it is asked for (:data:`TICKET_JS`: 1, 2, ... per page;
the page load's start, which runs no script, is 0), so the order is the person's, whatever order
the requests reach the server or end in. The server keeps each page's newest number (by Gradio's
session hash, a bounded table in memory: it only orders the starts of pages that are open now).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict

# The start's inputs with its number appended (the last input, a hidden number): the page counts
# its own starts.
TICKET_JS = (
    "(...args) => [...args.slice(0, -1),"
    " (window.__studioQueueStarts = (window.__studioQueueStarts || 0) + 1)]"
)


# The last card's keys, hidden while the next card loads (their words are the last card's):
# shown again once the card the start brings (or its refusal) is drawn.
HIDE_KEYS_JS = (
    "const keys = [...document.querySelectorAll("
    "'#queue-s1, #queue-s2, #queue-s3, .queue-example, #queue-enter')];"
    # at once: a button's transition would keep it on screen a fifth of a second more
    " keys.forEach((k) => { k.style.transition = 'none'; k.style.visibility = 'hidden'; });"
    " const root = document.querySelector('#queue-card');"
    " const back = new MutationObserver(() => {"
    " const d = root?.querySelector('[data-item]');"
    " if (d && !d.classList.contains('queue-loading')) {"
    " keys.forEach((k) => { k.style.visibility = ''; k.style.transition = ''; });"
    " back.disconnect(); } });"
    " if (root) back.observe(root, {subtree: true, childList: true, attributes: true});"
)


def start_js(loading: str) -> str:
    """A start's ``js``: its number (:data:`TICKET_JS`), and the card says ``loading`` at once,
    never what the last order left on it ("nothing left" included) while the new one is
    computed; the last card's suggestions and what Enter answered are hidden meanwhile
    (issue 75 item 4)."""
    return (
        "(...args) => { const c = document.querySelector('#queue-card [data-item]');"
        " if (c) { c.className = 'queue-card queue-empty queue-loading'; c.dataset.item = 'none';"
        f" c.textContent = {json.dumps(loading)}; {HIDE_KEYS_JS} }}"
        f" return ({TICKET_JS})(...args); }}"
    )


PAGES = 10_000  # pages remembered (the oldest forgotten first)

_newest: OrderedDict[str, float] = OrderedDict()
_lock = threading.Lock()


def claim(page: str | None, ticket: float | None) -> bool:
    """Note that ``page`` asked for start number ``ticket``; False when a newer start of that
    page came already (this one must change nothing). A request without a page or a number
    (a test, the API) is always the newest.

    Example:
        >>> claim("page-a", 0), claim("page-a", 2), claim("page-a", 1), still_newest("page-a", 2)
        (True, True, False, True)
    """
    if page is None or ticket is None:
        return True
    with _lock:
        newest = _newest.get(page)
        if newest is not None and ticket < newest:
            return False
        _newest[page] = ticket
        _newest.move_to_end(page)
        while len(_newest) > PAGES:
            _newest.popitem(last=False)
        return True


def still_newest(page: str | None, ticket: float | None) -> bool:
    """Whether no newer start of ``page`` was asked for since ``ticket`` was claimed."""
    if page is None or ticket is None:
        return True
    with _lock:
        return _newest.get(page, ticket) <= ticket
