"""The BANKING77 modules of the labelling walks: the annotator, its keys, the bulk label, the
settings and the retrain switch: they share one server (77 intents, built from ../shared/data). A
folder of ``tests/e2e`` runs whole on one pytest worker (tests/conftest.py), so it is started
once; the other BANKING77 folder has a server of its own and runs on the other worker."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import banking77_server_for_a_folder, launched_browser


@pytest.fixture(scope="package")
def browser():
    """One Chromium for this folder's modules (:func:`tests.e2e.conftest.launched_browser`)."""
    yield from launched_browser()


@pytest.fixture(scope="package")
def banking77_server(tmp_path_factory):
    """This folder's BANKING77 server (:func:`tests.e2e.conftest.banking77_server_for_a_folder`)."""
    yield from banking77_server_for_a_folder(tmp_path_factory)
