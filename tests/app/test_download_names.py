"""Issue 66 item 7: a client that reads only ``filename`` of ``Content-Disposition`` (curl
``-OJ``, Python's ``email`` package) saved every Chinese, Arabic or Cyrillic project as
``project.<ext>``, and a download from the app's pages as ``???.<ext>``. The ASCII name is now
the project's name transliterated, or ``project-<id>`` where nothing readable is left; the
exact name stays in ``filename*``."""

from __future__ import annotations

import asyncio
from email.message import Message
from pathlib import Path
from urllib.parse import quote

import pytest

from app.api.files import content_disposition
from app.perimeter.file_gate import PROJECT_FILE, FileGate

pytestmark = pytest.mark.fast

NAMES = {
    "Проект поддержки.csv": "Proekt podderzhki.csv",
    "订披萨.zip": "DingPiSa.zip",
    "مشروع البنك.json": "mshrw lbnk.json",
    "Café Été.slots.yml": "Cafe Ete.slots.yml",
}


def saved_as(disposition: str) -> str | None:
    """The name Python's ``email`` package gives the file (it reads ``filename`` first)."""
    message = Message()
    message["Content-Disposition"] = disposition
    return message.get_filename()


def test_a_client_reading_only_filename_gets_the_name_transliterated():
    for name, plain in NAMES.items():
        disposition = content_disposition(name)
        assert saved_as(disposition) == plain, name
        assert disposition.endswith(f"filename*=UTF-8''{quote(name)}")  # the exact name too


def test_a_name_with_nothing_readable_in_ascii_is_the_projects_id():
    assert saved_as(content_disposition("⁂.csv", "project-12")) == "project-12.csv"
    assert saved_as(content_disposition('"..".zip', "project-3")) == "project-3.zip"


def _gate_headers(root: Path, name: str, project_id: int) -> dict[bytes, bytes]:
    """The headers the download gate sends for the download ``name`` of a project."""
    folder = root / "dl-1"
    folder.mkdir(parents=True)
    (folder / name).write_text("text,label\n")
    (folder / PROJECT_FILE).write_text(str(project_id))
    sent: list[dict] = []

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"x"})

    async def send(message):
        sent.append(message)

    async def receive():  # the client sends nothing more, and stays connected
        await asyncio.Event().wait()

    gate = FileGate(app, root, lambda scope: "dana", lambda user, project: True, lambda path: None)
    path = f"/gradio_api/file={folder / name}"
    scope = {"type": "http", "method": "GET", "path": path, "headers": []}
    asyncio.run(gate(scope, receive, send))
    return dict(sent[0]["headers"])


def test_a_download_from_the_apps_pages_is_named_the_same_way(tmp_path):
    headers = _gate_headers(tmp_path / "a", "Проект.csv", 7)
    assert saved_as(headers[b"content-disposition"].decode("latin-1")) == "Proekt.csv"
    headers = _gate_headers(tmp_path / "b", "⁂.csv", 7)
    assert saved_as(headers[b"content-disposition"].decode("latin-1")) == "project-7.csv"
