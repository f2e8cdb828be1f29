"""The BANKING77 modules share one server (77 intents, built from ../shared/data): a folder of
``tests/e2e`` runs whole on one pytest worker (tests/conftest.py), so it is started once."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Server, imported_banking77


@pytest.fixture(scope="package")
def banking77_server(tmp_path_factory):
    """A server whose only project, ``banking77``, is :func:`banking77_csv` imported. One for
    this folder's modules, which run one after the other on one pytest worker: its warm-up is
    the slow part. The workbench tests run first and change labels."""
    srv = Server(imported_banking77(tmp_path_factory.mktemp("b77")), "--no-demo")
    try:
        srv.wait_ready()
        srv.wait_warm()
        yield srv
    finally:
        srv.stop()
