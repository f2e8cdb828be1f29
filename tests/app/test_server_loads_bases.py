"""A server whose projects serve int8 copies loaded no fp32 base encoder, and a retrain's first
version loads onto its base (core.training.model_io): the pool's switch waited 4.4 s more for
the library's import and the base, after the job said the version served. The warm-up loads
the projects' base encoders (fp32); one not installed here is logged and skipped, the warm-up
goes on."""

from __future__ import annotations

import dataclasses
import logging

import pytest

from app.serving.models import load_bases
from core.encoding import registry
from storage.projects import create_project


def test_the_warm_up_loads_each_projects_base_and_skips_one_not_installed(
    serving_state, monkeypatch, caplog
) -> None:
    monkeypatch.setattr(registry, "_loaded", {})  # nothing loaded in this process yet
    with serving_state.db.session() as s:
        create_project(s, "shop")  # MiniLM, the default
        create_project(s, "elsewhere", base_encoder="an-encoder-not-installed-here")
    with caplog.at_level(logging.ERROR):
        loaded = load_bases(serving_state.db, serving_state.live.models)
    assert loaded == ["minilm"]
    assert [name for name, _device in registry._loaded] == ["minilm"]
    assert "could not load the base encoder an-encoder-not-installed-here" in caplog.text


@pytest.mark.parametrize("auto_retrain", [True, False])
def test_the_server_loads_them_once_warm_where_retrains_start_by_themselves(
    serving_state, monkeypatch, auto_retrain
) -> None:
    """Where retrains start by themselves the next version comes without a request: the bases
    are loaded once the server is warm ("Warm:" is not held for them). A deployment with them
    off loads none: its servers start with less."""
    import gc
    import threading

    from app.cli import server

    with serving_state.db.session() as s:
        create_project(s, "shop")
    settings = dataclasses.replace(serving_state.settings, auto_retrain=auto_retrain)
    state = dataclasses.replace(serving_state, settings=settings)
    monkeypatch.setattr(registry, "_loaded", {})
    # the warm-up's other steps load nothing here (a project serving int8 copies loads no base)
    from app.services.design import map_warm_up
    from app.services.queue import queue

    monkeypatch.setattr(state.live, "warm_up", lambda readiness=None: None)
    monkeypatch.setattr(queue, "warm_up", lambda live, fan_out=None: None)
    monkeypatch.setattr(map_warm_up, "encode_map_rows", lambda live: 0)
    done = threading.Thread(target=lambda: None)
    done.start()
    try:
        server._warm_up(state, done)
    finally:
        gc.unfreeze()
    assert state.readiness.ready
    loaded = {name for name, _device in registry._loaded}
    assert ("minilm" in loaded) is auto_retrain
