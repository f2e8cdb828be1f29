"""Issue 65 item 8: the retrain that runs by itself, made visible where the designer labels. The
Label tab's line says which version serves and its accuracy, "improving…" while a retrain runs
(with a link to its progress in the Train tab); when another model starts serving, the card's
suggestions, the Map and the line follow without a reload, and one line says what changed (accuracy
before → after). Before, the Label tab said nothing of the model: a retrain was seen only in
the Train tab, and the card kept the old model's suggestions until the next answer.

On the demo folder's shared server: the retrain adds a version, and the version that served
before serves again at the end."""

from __future__ import annotations

import json
import time
import urllib.request
from urllib.parse import quote

import pytest

from tests.e2e.conftest import shot

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PROJECT = "Demo: Acme support"


def _rest(server, path: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(
        server.url + "api/v1/" + path,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="GET" if body is None else "POST",
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.loads(answer.read())


def _line(page) -> str:
    return page.inner_text("#queue-model")


def _wait_line(page, text: str, timeout: float = 120_000) -> str:
    page.wait_for_function(
        "(t) => (document.querySelector('#queue-model')?.innerText || '').includes(t)",
        arg=text,
        timeout=timeout,
    )
    return _line(page)


def _serving(server) -> str:
    """What serves the demo now, as the activate route names it: ``base`` or the version's id."""
    rows = _rest(server, f"projects/{quote(PROJECT)}/versions")["versions"]
    active = [r["version"] for r in rows if r["active"]]
    return str(active[0]) if active else "base"


def test_the_label_tab_says_what_serves_and_follows_a_new_model_without_a_reload(server, browser):
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.set_default_timeout(120_000)
    try:
        page.goto(server.url)
        page.wait_for_selector("#queue-card [data-item]:not([data-item=none])")
        line = _wait_line(page, "Serving")
        assert "improving" not in line, line
        before = _serving(server)

        # a retrain: "improving…" and its progress one click away
        started = _rest(
            server,
            f"projects/{quote(PROJECT)}/train",
            {"method": "convfit", "settings": {"epochs": 1, "batch_size": 16}},
        )
        job = started["job"]["id"]
        end = time.monotonic() + 300
        while _rest(server, f"jobs/{job}")["status"] == "queued":  # until a worker takes it
            assert time.monotonic() < end, "no worker took the retrain in 5 min"
            time.sleep(0.05)
        with server.workers_held():  # the job stays running while the page's poll sees it
            assert _rest(server, f"jobs/{job}")["status"] == "running"
            line = _wait_line(page, "improving…")
            shot(page, "65-8-label-improving")
            page.locator("#queue-model a.queue-model-progress").click()  # progress ›
            page.wait_for_function(
                "(j) => (document.querySelector('#job-progress')?.innerText || '')"
                ".includes('Job #' + j)",
                arg=job,
            )
            page.get_by_role("tab", name="Label").click()
        end = time.monotonic() + 600
        while _rest(server, f"jobs/{job}")["status"] in ("queued", "running"):
            assert time.monotonic() < end, "the retrain did not end in 10 min"
            time.sleep(2)
        made = _rest(server, f"jobs/{job}")["model_version_id"]
        assert made is not None

        # another model serves: the line says what changed, the card is scored again in place
        page.wait_for_function(
            "() => !(document.querySelector('#queue-model')?.innerText || '').includes('improving')"
        )
        page.wait_for_timeout(1_000)  # a version the retrain made active: its card, drawn
        now = _serving(server)
        target = "base" if now != "base" else str(made)
        # the Map, drawn once (the model that serves now), then back to labelling
        page.get_by_role("tab", name="Map").click()
        drawn = (
            "(w) => { const s = document.querySelector('#map-status')?.innerText || '';"
            " return s.includes('utterances') && !s.includes('quick PCA') && s.includes(w); }"
        )
        page.wait_for_function(drawn, arg="frozen" if now == "base" else f"v{now}")
        page.get_by_role("tab", name="Label").click()
        card = page.locator("#queue-card [data-item]")
        item, seq = card.get_attribute("data-item"), card.get_attribute("data-seq")
        _rest(server, f"projects/{quote(PROJECT)}/versions/{target}/activate", {})
        who = "The frozen base encoder" if target == "base" else f"v{target}"
        page.wait_for_function(
            "(w) => { const t = document.querySelector('#queue-model')?.innerText || '';"
            " return t.includes(w) && t.includes('now serves: accuracy'); }",
            arg=who,
            timeout=60_000,
        )
        line = _line(page)
        assert "→" in line and "%" in line, line
        # the project's summary line above the tabs names the model that serves now, too
        page.wait_for_function(
            "(w) => (document.querySelector('#project-summary')?.innerText || '').includes(w)",
            arg="frozen" if target == "base" else f"model v{target}",
            timeout=30_000,
        )
        page.wait_for_function(
            "(s) => document.querySelector('#queue-card [data-item]')?.getAttribute('data-seq')"
            " !== s",
            arg=seq,
            timeout=30_000,
        )
        assert card.get_attribute("data-item") == item  # the same utterance, not the next one
        # and the Map follows: drawn again for the model that serves now
        page.wait_for_function(drawn, arg="frozen" if target == "base" else f"v{target}")
        shot(page, "65-8-label-now-serves")
    finally:
        if _serving(server) != before:  # the model that served before serves again
            _rest(server, f"projects/{quote(PROJECT)}/versions/{before}/activate", {})
        context.close()
