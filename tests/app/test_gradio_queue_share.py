"""Issue 27, row 5 on the Gradio side: one signed-in session's flood of
``/gradio_api/call/predict`` is refused past ``EVENTS_QUEUED_PER_USER`` waiting events (429 with
Retry-After) instead of filling Gradio's queue ahead of everyone; another user's call is
answered meanwhile. Served on loopback as ``serve --multi-user`` runs it."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest

from app import web
from app.limits import EVENTS_QUEUED_PER_USER
from tests.app.live import PASSWORDS, PROJECT, serving, team_context

# Each encode runs the encoder's forward pass (tests/encoder_memo.py): its load is what is tested.
pytestmark = pytest.mark.encoder_passes


def test_one_sessions_flood_of_gradio_calls_is_refused_past_its_share(tmp_path):
    serving_state = team_context(tmp_path / "data")
    with serving(web.web_app(serving_state, host="127.0.0.1", port=0)) as base:

        async def run() -> tuple[list[httpx.Response], str]:
            # Twice the share at once, each call on a connection of its own: a call answers as
            # soon as its event is queued, so 64 keep the queue full. A connection kept alive
            # and reused after the server's 5 s idle timeout closed it (this process runs both
            # ends, on a loaded box) failed as a ReadError on CI, with 200 connections and with
            # 64 kept alive.
            limits = httpx.Limits(
                max_connections=2 * EVENTS_QUEUED_PER_USER, max_keepalive_connections=0
            )
            async with (
                httpx.AsyncClient(base_url=base, limits=limits, timeout=120) as vic,
                httpx.AsyncClient(base_url=base, timeout=120) as dana,
            ):
                for client, name in ((vic, "vic"), (dana, "dana")):
                    form = {"username": name, "password": PASSWORDS[name]}
                    assert (await client.post("/login", data=form)).status_code == 200
                # Each text new, so each event encodes (a repeated text is a cache hit that
                # empties the queue as fast as the flood fills it, on a box busy elsewhere).
                flood = [
                    asyncio.create_task(
                        vic.post(
                            "/gradio_api/call/predict",
                            json={"data": [PROJECT, f"where is my parcel number {i}", 1]},
                        )
                    )
                    for i in range(200)
                ]
                await asyncio.sleep(0.5)
                body = {"data": [PROJECT, "where is my parcel", 1]}
                started = await dana.post("/gradio_api/call/predict", json=body)
                answer = await dana.get(f"/gradio_api/call/predict/{started.json()['event_id']}")
                return await asyncio.gather(*flood), answer.text

        flood, dana = asyncio.run(run())
    serving_state.close()
    codes = [r.status_code for r in flood]
    assert set(codes) <= {200, 429}
    # Before: all 200 queued, ahead of dana. How many are refused depends on how fast the box
    # answers the first ones (CI saw only 11), so any refusal past the share is the behaviour.
    assert codes.count(429) >= 1
    busy = next(r for r in flood if r.status_code == 429)
    assert busy.headers["Retry-After"] == "1"
    said = re.fullmatch(
        r"Busy: vic already has (\d+) requests waiting; retry in a moment\.", busy.json()["error"]
    )
    assert said is not None and int(said.group(1)) >= EVENTS_QUEUED_PER_USER
    assert "track_order" in dana
