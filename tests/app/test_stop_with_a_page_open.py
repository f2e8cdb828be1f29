"""A server stopped while a page is open: the page's stream (Gradio's heartbeat, which every open
tab holds) was cut by uvicorn after its graceful 5 s and logged as "Exception in ASGI
application" with a 60-line traceback (seen in bench/beside_retrain.py's server log). It is
ended instead, its client told the response is complete; the server exits 0 and its log has
no traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.samples import make_tiny

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_a_server_stopped_with_a_page_open_ends_its_stream_without_a_traceback(
    serving_state, tiny_everywhere, tmp_path
) -> None:
    from tests.servers import free_port

    make_tiny(serving_state, encoder=tiny_everywhere)
    data = serving_state.settings.data_dir
    port = free_port()
    log = tmp_path / "serve.log"
    serve = ["serve", "--port", str(port), "--no-demo"]
    server = subprocess.Popen(
        [sys.executable, "-m", "app", "--data-dir", str(data), *serve],
        env={**os.environ, "INTENT_STUDIO_AUTO_RETRAIN": "off"},
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        cwd=ROOT,
    )
    url = f"http://127.0.0.1:{port}"
    lines: list[str] = []
    ended = threading.Event()

    def page() -> None:  # what an open tab holds: its heartbeat, read as it comes
        with httpx.stream("GET", f"{url}/gradio_api/heartbeat/tab1", timeout=60) as stream:
            for line in stream.iter_lines():
                lines.append(line)
        ended.set()

    try:
        deadline = time.monotonic() + 120
        while True:
            assert time.monotonic() < deadline and server.poll() is None, log.read_text()[-3000:]
            try:
                if httpx.get(f"{url}/api/v1/ready", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        tab = threading.Thread(target=page, daemon=True)
        tab.start()
        deadline = time.monotonic() + 30
        while "data: ALIVE" not in lines:
            assert time.monotonic() < deadline, ("the heartbeat never began", lines)
            time.sleep(0.1)
        server.send_signal(signal.SIGTERM)
        code = server.wait(60)
        tab.join(30)
    finally:
        if server.poll() is None:
            server.kill()
    text = log.read_text()
    assert code == 0, text[-3000:]
    assert ended.is_set(), "the page's stream was not ended"
    assert "Exception in ASGI application" not in text, text[-3000:]
    assert "Traceback" not in text, text[-3000:]
