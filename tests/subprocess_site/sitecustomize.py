"""Run by Python as it starts any process a test starts with this folder first on its PYTHONPATH
(the ``tiny_everywhere`` fixture, tests/conftest.py): registers the tiny encoder built at
``$INTENT_STUDIO_TEST_TINY`` (:mod:`tests.tiny_encoder`), so that a worker, a server or a CLI
the test starts can train and serve a project made on it. Not a package: nothing imports it."""

from __future__ import annotations

import os

if os.environ.get("INTENT_STUDIO_TEST_TINY"):
    from pathlib import Path

    from core.encoding.registry import register
    from tests.tiny_encoder import spec

    register(spec(Path(os.environ["INTENT_STUDIO_TEST_TINY"])))
