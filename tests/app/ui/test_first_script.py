"""The script every page of the app runs first (app/ui/first_script.py): first in the head of
an HTML answer, with the length that answer then has; other answers pass untouched."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

import assets
from app.ui.first_script import FirstScript

pytestmark = pytest.mark.fast

PAGE = "<html><head><script type=module src=app.js></script></head><body></body></html>"


def _client(script: str) -> TestClient:
    async def page(request):
        return HTMLResponse(PAGE)

    async def data(request):
        return JSONResponse({"head": "<head>"})

    routes = [Route("/", page, methods=["GET", "POST"]), Route("/data", data)]
    app = Starlette(routes=routes, middleware=[Middleware(FirstScript, script=script)])
    return TestClient(app)


def test_an_html_page_runs_the_script_before_its_modules():
    answer = _client("window.first = 1").get("/")
    head = answer.text.split("<head>", 1)[1]
    assert head.startswith("<script>window.first = 1</script><script type=module")
    assert int(answer.headers["content-length"]) == len(answer.content)


def test_other_answers_pass_as_they_are():
    client = _client("window.first = 1")
    assert client.get("/data").json() == {"head": "<head>"}
    assert client.post("/").text == PAGE  # only GETs: no form answer is rewritten


def test_the_apps_page_runs_the_frames_script_first():
    import gradio as gr
    from fastapi import FastAPI

    from app.ui.mount import mount_ui

    with gr.Blocks() as demo:
        gr.Textbox("hello")
    app = mount_ui(
        FastAPI(), demo, host="127.0.0.1", port=7860, css="", max_file_size=1024, auth=None
    )
    page = TestClient(app, base_url="http://127.0.0.1:7860").get("/")
    assert page.status_code == 200
    head = page.text.split("<head>", 1)[1]
    assert head.startswith("<script>" + assets.text("frames.js") + "</script>")
