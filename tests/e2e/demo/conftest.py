"""The demo modules share one server on the demo project ("Demo: Acme support"): a folder of
``tests/e2e`` runs whole on one pytest worker (tests/conftest.py), so it starts once, not once
per module. Each module therefore leaves what it adds in place for the next (names of its own,
versions read from the page) and passes alone as well as after the others."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Server, launched_browser


@pytest.fixture(scope="package")
def browser():
    """One Chromium for this folder's modules (:func:`tests.e2e.conftest.launched_browser`)."""
    yield from launched_browser()


@pytest.fixture(scope="package")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("demo") / "data")
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.stop()


def started_job(page) -> int:
    """The number of the job the Retrain click queued (or the active one it shows), read from the
    click's own message: the panel may still show an earlier module's job on this shared server,
    or its "No training yet." placeholder before its first tick."""
    found = page.wait_for_function(
        "() => (document.querySelector('#train-message')?.innerText || '')"
        ".match(/Job #(\\d+)/)?.[1]"
    )
    return int(found.json_value())


def wait_for_job(page, job: int, *states: str, timeout: float = 300_000) -> None:
    """Wait until the Train tab's panel shows job ``job`` in one of ``states`` ("running",
    "succeeded"...)."""
    page.wait_for_function(
        "([job, states]) => { const t = document.querySelector('#job-progress')?.innerText"
        " || ''; const m = t.match(/Job #(\\d+)/);"
        " return !!m && +m[1] === job && states.some((s) => t.includes(s)); }",
        arg=[job, list(states)],
        timeout=timeout,
    )
