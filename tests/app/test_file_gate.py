"""Issue 73, items 1 and 8: what a file route (``/gradio_api/file=<path>``) serves, on the app
``serve`` runs (multi-user, on loopback), whatever the spelling of the path.

Before, the download gate matched the path as written while Gradio served it resolved: a member
removed from a project got 404 for ``<data-dir>/downloads/dl-…/Q-….html`` but 200, inline HTML on
the app's origin, for ``/proc/self/root<data-dir>/downloads/…``, ``/proc/self/cwd/downloads/…``
(the server's cwd being the data directory), ``/proc/<pid>/cwd``, ``/proc/<pid>/root`` and
``/proc/thread-self/cwd``; and any signed-in user, viewers too, read another user's upload by its
path. Now a path is resolved before the gate decides, and a file route serves a download only to
those who may read its project now, an upload only to whoever uploaded it, nothing else, and
always as an attachment."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from app import web
from app.access import auth
from app.services.projects.downloads import download_path
from app.services.projects.members import add_member, remove_member
from app.services.projects.projects import new_project
from tests.app.live import PASSWORDS, PROJECT, raw_request, serving, status_of, team_context
from tests.handles import live

pytestmark = pytest.mark.slow

# dora stands for the designer who builds a report (dana's name is left to the other modules:
# the security log keeps a bounded number of refusals a minute per user, in the process)
PASSWORDS = {**PASSWORDS, "eve": "eve-password-1", "dora": "dora-password-1"}
REPORT = b"<!doctype html><script>document.title='read on the app origin'</script>rows"


@pytest.fixture(scope="module")
def studio(tmp_path_factory):
    """The team's app on loopback, its data directory as the server's working directory (as in
    the team's image); eve is a designer in no project, "hidden" a project only the admin sees.
    Yields (base URL, the context, dora's report of the project, the admin's export of hidden)."""
    serving_state = team_context(tmp_path_factory.mktemp("files") / "data")
    auth.add_user(serving_state.db, "eve", "designer", PASSWORDS["eve"])
    auth.add_user(serving_state.db, "dora", "designer", PASSWORDS["dora"])
    add_member(serving_state.db, live(serving_state, PROJECT), "dora")
    new_project(serving_state.db, "hidden")
    report = download_path(
        serving_state.settings, f"{PROJECT}-report.html", live(serving_state, PROJECT).id
    )
    report.write_bytes(REPORT)
    export = download_path(serving_state.settings, "hidden.csv", live(serving_state, "hidden").id)
    export.write_bytes(b"text,label\nthe hidden line,secret\n")
    was = os.getcwd()
    os.chdir(serving_state.settings.data_dir)
    try:
        with serving(web.web_app(serving_state, host="127.0.0.1", port=0)) as base:
            yield base, serving_state, report, export
    finally:
        os.chdir(was)
        serving_state.close()


def browser(base: str, name: str) -> httpx.Client:
    client = httpx.Client(base_url=base, timeout=60)
    assert client.post("/login", data={"username": name, "password": PASSWORDS[name]}).is_success
    return client


def spellings(path: Path, data_dir: Path, links: Path) -> dict[str, str]:
    """The ways to name ``path`` (a file under ``data_dir``) in a file route's URL, each as it is
    sent on the wire (percent-encoded where the spelling says so)."""
    pid, own = os.getpid(), str(path)
    inside = str(path.relative_to(data_dir))
    tid = threading.get_native_id()
    links.mkdir(parents=True, exist_ok=True)
    (links / "data").symlink_to(data_dir)
    (links / "file").symlink_to(path)
    fd = os.open(path, os.O_RDONLY)  # an open descriptor of this process (the server's)
    out = {
        "as written": own,
        "/proc/self/root": f"/proc/self/root{own}",
        "/proc/<pid>/root": f"/proc/{pid}/root{own}",
        "/proc/thread-self/root": f"/proc/thread-self/root{own}",
        "/proc/<pid>/task/<tid>/root": f"/proc/{pid}/task/{tid}/root{own}",
        "/proc/self/root twice": f"/proc/self/root/proc/self/root{own}",
        "/proc/self/cwd": f"/proc/self/cwd/{inside}",
        "/proc/<pid>/cwd": f"/proc/{pid}/cwd/{inside}",
        "/proc/thread-self/cwd": f"/proc/thread-self/cwd/{inside}",
        "/proc/<pid>/task/<tid>/cwd": f"/proc/{pid}/task/{tid}/cwd/{inside}",
        "/proc/self/fd": f"/proc/self/fd/{fd}",
        "relative to the cwd": inside,
        "./ relative": f"./{inside}",
        "doubled slashes": own.replace("/", "//"),
        "dot segments": f"{data_dir}/cache/../{inside}",
        "dot segments at the root": f"/../../{own}",
        "a symlinked folder": f"{links}/data/{inside}",
        "a symlink to the file": f"{links}/file",
        "URL-encoded": quote(own, safe=""),
        "URL-encoded dots": f"{data_dir}/cache/%2e%2e/{quote(inside)}",
        "URL-encoded /proc": quote(f"/proc/self/root{own}", safe=""),
    }
    return out


ROUTES = ("/gradio_api/file=", "/gradio_api/file/")


class Answer:
    """An answer read off the wire: its status, headers (lower-case names) and body."""

    def __init__(self, raw: bytes) -> None:
        head, _, self.content = raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status_code = status_of(raw)
        self.headers = {
            k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])
        }
        self.text = self.content.decode("utf-8", "replace")


def fetch(client: httpx.Client, route: str, spelled: str) -> Answer:
    """GET a file route with ``spelled`` exactly as it is: over a socket, with the client's
    session cookies (an HTTP library would remove dot segments and re-encode the path)."""
    cookies = "; ".join(f"{k}={v}" for k, v in client.cookies.items())
    host = str(client.base_url).removeprefix("http://").rstrip("/")
    head = (
        f"GET {route}{spelled} HTTP/1.1\r\nHost: {host}\r\nCookie: {cookies}\r\nConnection: close"
    )
    return Answer(raw_request(str(client.base_url).rstrip("/"), head))


def test_no_spelling_of_a_download_reaches_someone_who_may_not_read_its_project(studio, tmp_path):
    base, serving_state, report, export = studio
    dora, vic, eve, admin = (browser(base, n) for n in ("dora", "vic", "eve", "admin"))
    remove_member(
        serving_state.db, live(serving_state, PROJECT), "dora"
    )  # dora built the report, then was removed
    try:
        served, refused = [], set()
        for what, spelled in spellings(report, serving_state.settings.data_dir, tmp_path).items():
            for route in ROUTES:
                for who, client in (("dora", dora), ("eve", eve)):
                    got = fetch(client, route, spelled)
                    if got.status_code != 404 or REPORT in got.content:
                        served.append((what, route, who, got.status_code))
                    refused.add(got.text)
        for what, spelled in spellings(
            export, serving_state.settings.data_dir, tmp_path / "x"
        ).items():
            for route in ROUTES:
                for who, client in (("vic", vic), ("eve", eve)):  # no member of "hidden"
                    got = fetch(client, route, spelled)
                    if got.status_code != 404 or b"hidden line" in got.content:
                        served.append((what, route, who, got.status_code))
                    refused.add(got.text)
        assert served == []
        assert len(refused) == 1 and "No such download" in refused.pop()  # says nothing more
    finally:
        add_member(serving_state.db, live(serving_state, PROJECT), "dora")
    # those who may read it get it, by every spelling (each names it), always as an attachment
    for what, spelled in spellings(report, serving_state.settings.data_dir, tmp_path / "y").items():
        for client in (dora, vic, admin):
            got = fetch(client, "/gradio_api/file=", spelled)
            assert got.status_code == 200 and got.content == REPORT, (what, got.status_code)
            assert got.headers["content-disposition"].startswith("attachment"), what
            assert got.headers["x-content-type-options"] == "nosniff"


def test_an_upload_is_served_only_to_whoever_uploaded_it(studio, tmp_path):
    base, serving_state, _, _ = studio
    dora, vic, eve, admin = (browser(base, n) for n in ("dora", "vic", "eve", "admin"))
    body = b"text,label\ndora's private line,track_order\n"
    sent = dora.post("/gradio_api/upload", files=[("files", ("rows.csv", body, "text/csv"))])
    assert sent.status_code == 200, sent.text
    path = Path(sent.json()[0])
    try:
        for what, spelled in spellings(path, path.parent, tmp_path).items():
            for client in (vic, eve, admin):
                got = fetch(client, "/gradio_api/file=", spelled)
                assert got.status_code == 404 and body not in got.content, (what, got.status_code)
        own = fetch(dora, "/gradio_api/file=", str(path))
        assert own.status_code == 200 and own.content == body
        assert own.headers["content-disposition"].startswith("attachment")
    finally:
        serving_state.uploads.used_up(path)


def test_nothing_else_is_served_whatever_its_spelling(studio, tmp_path):
    """The database, its WAL, a model file, a file outside the app: 404 for everyone, the admin
    too (a file route serves downloads and uploads, nothing else)."""
    base, serving_state, _, _ = studio
    admin = browser(base, "admin")
    outside = tmp_path / "notes.txt"
    outside.write_text("a file of the server's account")
    data_dir = serving_state.settings.data_dir
    for target in (data_dir / "studio.db", data_dir / "downloads" / ".keep", outside):
        if not target.exists():
            target.write_text("x")
        for what, spelled in spellings(
            target, target.parent, tmp_path / "links" / target.name
        ).items():
            got = fetch(admin, "/gradio_api/file=", spelled)
            assert got.status_code == 404, (target.name, what, got.status_code)
