"""The stream guard (``app/ui/stream_guard.py``): an event sent as Gradio's server closes the
page's answer stream still gets its answer.

CI saw a key of the Label tab wait 60 s on an idle server, twice. The cause, reproduced here:
the server closes the stream when its last event ends; an event joined in that instant is
answered before the page reads the closing message, so the page opens no new stream and the
answer waits on the server for good. A loaded box delays the closing message; here a
middleware delays it by 0.4 s, every time, so each click sent the moment the one before was
answered is stranded without the guard (checked: the second click never lands without it)."""

from __future__ import annotations

import asyncio
from typing import Any

import gradio as gr
from fastapi import FastAPI

from app.ui.stream_guard import add_stream_guard
from tests.app.live import serving

CLOSE_DELAY_S = 0.4


class DelayedClose:
    """ASGI middleware: the answer stream's closing message leaves CLOSE_DELAY_S late, as it
    does when the server's event loop is starved."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].endswith("/queue/data"):
            await self.app(scope, receive, send)
            return

        async def late(message: Any) -> None:
            if message.get("type") == "http.response.body" and b"close_stream" in message.get(
                "body", b""
            ):
                await asyncio.sleep(CLOSE_DELAY_S)
            await send(message)

        await self.app(scope, receive, late)


def _counter_app() -> FastAPI:
    count = {"n": 0}

    def bump(_: str) -> str:
        count["n"] += 1
        return str(count["n"])

    with gr.Blocks() as demo:
        shown = gr.Textbox(elem_id="count")
        button = gr.Button("count", elem_id="bump")
        button.click(bump, [shown], [shown], trigger_mode="multiple", show_progress="hidden")
        add_stream_guard(demo)
    server = gr.mount_gradio_app(FastAPI(), demo, path="")
    server.add_middleware(DelayedClose)
    return server


def test_a_click_sent_as_the_stream_closes_is_answered(browser):
    with serving(_counter_app()) as base:
        context = browser.new_context()
        page = context.new_page()
        try:
            page.goto(base)
            page.wait_for_selector("#bump")
            page.wait_for_function("() => window.__studioStreamGuard === true")
            for n in range(1, 7):  # each click the moment the one before is on screen
                page.click("#bump")
                page.wait_for_function(
                    "(n) => document.querySelector('#count textarea').value === n",
                    arg=str(n),
                    timeout=10_000,
                )
            # the nudges did not count: six clicks, six events of the counter
            assert page.input_value("#count textarea") == "6"
        finally:
            context.close()
