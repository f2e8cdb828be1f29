"""Gradio's queue summed up its last 10,000 events after every event, for a ``/monitoring``
dashboard the app does not serve (a pandas table grouped by function: 34-46 ms of CPU an event
on a 2-core Xeon; 35 s of the servers' CPU in three folders of browser tests). The app served
on loopback answers its events without summing them up."""

from __future__ import annotations

import httpx
import pytest
from gradio.queueing import Queue

from app import web
from tests.app.live import PASSWORDS, PROJECT, serving, team_context

pytestmark = pytest.mark.slow


def test_the_apps_gradio_events_are_answered_without_a_summary_of_the_queue(tmp_path, monkeypatch):
    tables: list[int] = []
    real = Queue._get_df

    def counted(records):
        tables.append(len(records))
        return real(records)

    monkeypatch.setattr(Queue, "_get_df", staticmethod(counted))
    serving_state = team_context(tmp_path / "data")
    try:
        with (
            serving(web.web_app(serving_state, host="127.0.0.1", port=0)) as base,
            httpx.Client(base_url=base, timeout=120) as dana,
        ):
            form = {"username": "dana", "password": PASSWORDS["dana"]}
            assert dana.post("/login", data=form).status_code == 200
            for text in ("where is my parcel", "my card is lost", "hello"):
                started = dana.post("/gradio_api/call/predict", json={"data": [PROJECT, text, 1]})
                event = started.json()["event_id"]
                answer = dana.get(f"/gradio_api/call/predict/{event}")
                assert "event: complete" in answer.text, answer.text
    finally:
        serving_state.close()
    assert tables == []
