"""The demo modules share one server on the demo project ("Demo: Acme support"): a folder of
``tests/e2e`` runs whole on one pytest worker (tests/conftest.py), so it starts once, not once
per module. Each module therefore leaves what it adds in place for the next (names of its own,
versions read from the page) and passes alone as well as after the others."""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import Server


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("demo") / "data")
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.stop()


def shown_job(page) -> int:
    """The number of the job the Train tab's panel shows, once the panel has loaded (0: none
    yet). On this shared server it may be an earlier module's job on the same project."""
    page.wait_for_function(
        "() => /No training yet|Job #\\d+/.test(document.querySelector('#job-progress')"
        "?.innerText || '')"
    )
    found = re.search(r"Job #(\d+)", page.inner_text("#job-progress"))
    return int(found.group(1)) if found else 0


def wait_for_job(page, after: int, *states: str, timeout: float = 300_000) -> None:
    """Wait until the Train tab's panel shows a job newer than job ``after`` in one of
    ``states`` ("running", "succeeded"...)."""
    page.wait_for_function(
        "([after, states]) => { const t = document.querySelector('#job-progress')?.innerText"
        " || ''; const m = t.match(/Job #(\\d+)/);"
        " return !!m && +m[1] > after && states.some((s) => t.includes(s)); }",
        arg=[after, list(states)],
        timeout=timeout,
    )
