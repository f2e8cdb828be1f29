"""The team modules share one ``serve --multi-user`` server: a folder of ``tests/e2e`` runs whole
on one pytest worker (tests/conftest.py), so it is started once."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import PASSWORDS, Server, cli, launched_browser


@pytest.fixture(scope="package")
def browser():
    """One Chromium for this folder's modules (:func:`tests.e2e.conftest.launched_browser`)."""
    yield from launched_browser()


@pytest.fixture(scope="package")
def team_server(tmp_path_factory):
    """A ``serve --multi-user`` server (one for this folder's modules) with a designer, dana, and a viewer,
    vic, besides the admin, started with settings that would open a share tunnel or code edits;
    dana and vic are members of the demo project it makes (``intent-studio members add``)."""
    data = tmp_path_factory.mktemp("team") / "data"
    for name, role in (("dana", "designer"), ("vic", "viewer")):
        cli(data, "users", "add", name, "--role", role, password=PASSWORDS[name])
    hostile = {"GRADIO_SHARE": "True", "GRADIO_VIBE_MODE": "1"}  # would open a tunnel / code edits
    srv = Server(
        data, "--multi-user", env={"INTENT_STUDIO_ADMIN_PASSWORD": PASSWORDS["admin"], **hostile}
    )
    try:
        srv.wait_ready()
        for name in ("dana", "vic"):
            cli(data, "members", "add", name, "--project", "Demo: Acme support")
        yield srv
    finally:
        srv.stop()
