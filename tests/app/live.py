"""A real server on a free loopback port, in this process: the app ``serve`` runs
(:func:`app.web.web_app`), or any ASGI app, under uvicorn in a thread; and a raw HTTP/1.1 client
for the requests a polite client library would not send (a body that lies about its length)."""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn

from tests.handles import live

PASSWORDS = {"admin": "admin-password", "dana": "designer-password", "vic": "viewer-password"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(app: Any, port: int | None = None) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1 until the block ends; yields its base URL."""
    port = port or free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
    )
    thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


PROJECT = "shop"
EXAMPLES = {
    "track_order": ["where is my parcel", "track my order", "has my package shipped"],
    "cancel_order": ["cancel my order", "I want to cancel it", "stop my purchase"],
}


def team_context(data_dir: Path) -> Any:
    """A multi-user context on ``data_dir`` with a small project (:data:`PROJECT`: six labelled
    utterances, so the first prediction costs little), an admin, a designer (dana) and a viewer
    (vic) (passwords in :data:`PASSWORDS`)."""
    from app.access import auth
    from app.config import load_settings
    from app.services.labelling import data as data_svc
    from app.services.projects.members import add_member
    from app.services.projects.projects import new_project
    from app.serving.state import ServingState

    serving_state = ServingState.open(dataclasses.replace(load_settings(data_dir), multi_user=True))
    auth.ensure_admin(serving_state.db, PASSWORDS["admin"])
    auth.add_user(serving_state.db, "dana", "designer", PASSWORDS["dana"])
    auth.add_user(serving_state.db, "vic", "viewer", PASSWORDS["vic"])
    new_project(serving_state.db, PROJECT)
    for name in ("dana", "vic"):  # members, each with their own role
        add_member(serving_state.db, live(serving_state, PROJECT), name)
    for intent, texts in EXAMPLES.items():
        for text in texts:
            data_svc.add_utterance(
                serving_state.db, live(serving_state, PROJECT), text, [intent], create=True
            )
    return serving_state


def raw_request(url: str, head: str, body: bytes = b"", *, timeout: float = 10) -> bytes:
    """Send ``head`` (request line and headers, without the blank line) and ``body`` as they
    are; returns what the server answered until it closed or ``timeout`` passed."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(head.encode("latin-1") + b"\r\n\r\n" + body)
        chunks = []
        try:
            while chunk := sock.recv(65536):
                chunks.append(chunk)
                if b"\r\n\r\n" in b"".join(chunks) and _complete(b"".join(chunks)):
                    break
        except TimeoutError:
            pass
        return b"".join(chunks)


def _complete(answer: bytes) -> bool:
    head, _, body = answer.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":")[1])
    return False


def status_of(answer: bytes) -> int:
    """The status code of a raw HTTP answer (0: none came)."""
    parts = answer.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
