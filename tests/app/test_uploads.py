"""The files and sessions of the app ``serve`` runs (multi-user) on loopback.

Issue 45, row 2: any signed-in user, viewers too, could upload 25 MB files through Gradio's
``/gradio_api/upload`` with no total limit (288 MB in about 3 s), kept for a day. Now a viewer
(who can import nothing) is refused, each user's uploads waiting for an import and everyone's
together are capped (413 naming the cap), and a file is removed when its import ends, which
gives its room back. Issue 56: an event reads only files its user uploaded (row 1), an upload
from another site is refused (row 6), downloads go only to those who may read their project and
signing out is a POST (row 10), and the security log keeps what a hostile user tried (row 11)."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import httpx
import pytest

from app import web
from app.perimeter.uploads import UploadLimits
from tests.app.live import PASSWORDS, PROJECT, serving, team_context
from tests.handles import live

pytestmark = pytest.mark.slow

KB = 1024
LIMITS = UploadLimits(per_user=300 * KB, total=500 * KB, request=200 * KB)


@pytest.fixture(scope="module")
def studio(tmp_path_factory):
    serving_state = team_context(tmp_path_factory.mktemp("uploads") / "data")
    with serving(web.web_app(serving_state, host="127.0.0.1", port=0, uploads=LIMITS)) as base:
        yield base, serving_state
    serving_state.close()


def browser(base: str, name: str) -> httpx.Client:
    client = httpx.Client(base_url=base, timeout=60)
    assert client.post("/login", data={"username": name, "password": PASSWORDS[name]}).is_success
    return client


def upload(client: httpx.Client, size: int, name: str = "rows.csv") -> httpx.Response:
    body = b"text,label\n" + b"x" * (size - 11)
    return client.post("/gradio_api/upload", files=[("files", (name, body, "text/csv"))])


def test_a_viewer_cannot_upload(studio):
    base, _ = studio
    refused = upload(browser(base, "vic"), 10 * KB)
    assert refused.status_code == 403
    assert "viewer" in refused.json()["error"]


def test_uploads_are_capped_per_user_and_in_all(studio):
    base, serving_state = studio
    dana, admin = browser(base, "dana"), browser(base, "admin")
    kept = []
    for i in range(3):
        answer = upload(dana, 90 * KB, f"rows{i}.csv")
        assert answer.status_code == 200, answer.text
        kept += answer.json()
    assert all(Path(p).stat().st_size == 90 * KB for p in kept)
    over = upload(dana, 40 * KB)  # 270 KiB kept: 40 more is past her 300
    assert over.status_code == 413 and "your uploads" in over.json()["error"]
    assert upload(admin, 250 * KB).status_code == 413  # one request: at most 200 KiB
    assert upload(admin, 150 * KB).status_code == 200
    full = upload(admin, 90 * KB)  # 420 KiB kept; 90 more is past everyone's 500
    assert full.status_code == 413 and "everyone's uploads" in full.json()["error"]

    # an import ends: its file is removed and its room comes back
    from app.ui.data_manage import do_import

    serving_state.uploads.used_up(kept[0])
    assert not Path(kept[0]).exists()
    good = dana.post(
        "/gradio_api/upload",
        files=[("files", ("good.csv", b"text,label\nwhere is it,track_order\n", "text/csv"))],
    )
    assert good.status_code == 200, good.text
    path = good.json()[0]
    message, *_ = do_import(serving_state, live(serving_state, PROJECT), path, "", True)
    assert "Imported 1" in message, message
    assert not Path(path).exists()
    assert serving_state.uploads.used() == (2 * 90 + 150) * KB  # dana's two left and admin's
    assert upload(dana, 100 * KB).status_code == 200  # room again


def test_an_upload_nobody_imports_is_removed_after_its_time(tmp_path):
    from app.perimeter.uploads import Uploads

    clock = [1000.0]
    limits = dataclasses.replace(LIMITS, per_user=100 * KB, kept_s=60)
    uploads = Uploads(limits, clock=lambda: clock[0])
    folder = tmp_path / "sha"
    folder.mkdir()
    (folder / "a.csv").write_bytes(b"x" * KB)
    uploads.add("dana", [str(folder / "a.csv")], KB)
    assert uploads.room("dana")[0] == 99 * KB
    clock[0] += 61
    assert uploads.room("dana")[0] == 100 * KB
    assert not folder.exists()


def gradio_event(client: httpx.Client, api_name: str, data: list, session: str = "") -> dict:
    """Send one UI event as the page does (``/gradio_api/queue/join``, then read its answer from
    ``/gradio_api/queue/data``): the message that ends it (``process_completed``). ``session``:
    the page's session (a fresh one by default)."""
    import uuid

    config = client.get("/config").json()
    fn_index = next(d["id"] for d in config["dependencies"] if d.get("api_name") == api_name)
    session = session or uuid.uuid4().hex
    joined = client.post(
        "/gradio_api/queue/join",
        json={"data": data, "fn_index": fn_index, "session_hash": session, "event_data": None},
    )
    assert joined.status_code == 200, joined.text
    with client.stream("GET", "/gradio_api/queue/data", params={"session_hash": session}) as sse:
        for line in sse.iter_lines():
            if line.startswith("data:"):
                message = json.loads(line[5:])
                if message.get("msg") == "process_completed":
                    return dict(message)
    raise AssertionError("the event never completed")


def page_with_projects(client: httpx.Client) -> str:
    """A page's session after its load filled the project picker (a picker's value must be one
    of its choices, and behind a sign-in they are filled at load)."""
    import uuid

    config = client.get("/config").json()
    picker = next(c["id"] for c in config["components"] if c["props"].get("elem_id") == "project")
    fill = next(
        d["api_name"]
        for d in config["dependencies"]
        if d["inputs"] == [picker] and d["outputs"] == [picker] and "load" in str(d["targets"])
    )
    session = uuid.uuid4().hex
    assert gradio_event(client, fill, [None], session)["success"]
    return session


def file_data(path: str | Path) -> dict:
    return {"path": str(path), "orig_name": Path(path).name, "meta": {"_type": "gradio.FileData"}}


def test_an_event_reads_only_files_this_user_uploaded(studio, tmp_path):
    """Issue 56, row 1 (high): an event whose file input carries a ``path`` never uploaded
    (the Data tab's import, the Train tab's Open bundle) imported any CSV the server could read,
    quoted other files' first lines in its refusal and told whether a path exists (Gradio's own
    check stands aside for an app mounted with ``gr.mount_gradio_app``). Now every file an event
    receives must be an upload of this user waiting to be used; anything else is refused with one
    message that says nothing of the file, before Gradio copies it anywhere."""
    import gradio.utils

    base, serving_state = studio
    dana, admin = browser(base, "dana"), browser(base, "admin")
    secret = tmp_path / "outside" / "rows.csv"
    secret.parent.mkdir()
    secret.write_text("text,label\nthe secret line,track_order\n")
    other = tmp_path / "outside" / "notes.txt"
    other.write_text("first line of a private file\n")
    theirs = upload(admin, 2 * KB, "theirs.csv").json()[0]  # another user's upload
    before = len(data_rows(serving_state))
    answers = []
    for path in (secret, other, tmp_path / "no such file.csv", theirs):
        for event, data in (
            ("do_import", [None, file_data(path), PROJECT, True, ""]),
            ("open_bundle", [file_data(path)]),
        ):
            done = gradio_event(dana, event, data)
            assert done["success"] is False, (event, path, done)
            answers.append(json.dumps(done.get("output"), sort_keys=True))
    assert len(set(answers)) == 1  # one answer, whatever the event and the path
    assert "upload it again" in answers[0]
    for text in ("secret line", "first line of a private", "no such file", str(tmp_path), "theirs"):
        assert not any(text in a for a in answers)
    assert len(data_rows(serving_state)) == before  # nothing imported
    cache = Path(gradio.utils.get_upload_folder())
    copied = [f for f in cache.rglob("*") if f.is_file() and f.read_bytes() == secret.read_bytes()]
    assert copied == []  # and nothing copied into Gradio's cache, where a URL could serve it
    assert Path(theirs).exists()  # another user's upload is left alone

    # her own upload still imports, once
    own = dana.post(
        "/gradio_api/upload",
        files=[("files", ("own.csv", b"text,label\nwhere is my box,track_order\n", "text/csv"))],
    ).json()[0]
    done = gradio_event(dana, "do_import", [None, file_data(own), PROJECT, True, ""])
    assert done["success"] is True and "Imported 1" in json.dumps(done["output"]), done
    again = gradio_event(dana, "do_import", [None, file_data(own), PROJECT, True, ""])
    assert again["success"] is False and "upload it again" in json.dumps(again["output"])
    assert len(data_rows(serving_state)) == before + 1


def data_rows(serving_state) -> list:
    from app.services.labelling.data import table

    return table(serving_state.db, live(serving_state, PROJECT).handle())


def test_an_upload_posted_from_another_site_is_refused_and_takes_no_room(tmp_path):
    """Issue 56, row 6: with no sign-in (single-user mode), a plain cross-site form could post
    files to the upload route until the quota was full; the user's own import then got 413 for
    up to an hour. An upload must come from the app's own page (its ``Origin``, else its
    ``Referer``, names the server it was sent to); scripts without either still upload."""
    from app.config import load_settings
    from app.serving.state import ServingState

    serving_state = ServingState.open(load_settings(tmp_path / "data"))
    try:
        with serving(web.web_app(serving_state, host="127.0.0.1", port=0, uploads=LIMITS)) as base:
            client = httpx.Client(base_url=base, timeout=60)
            for headers in (
                {"Origin": "https://evil.example"},
                {"Origin": "null"},
                {"Referer": "https://evil.example/form.html"},
            ):
                client.headers.clear()
                client.headers.update(headers)
                refused = upload(client, 150 * KB)
                assert refused.status_code == 403, (headers, refused.text)
                assert "own page" in refused.json()["error"]
            assert serving_state.uploads.used() == 0
            client.headers.clear()
            client.headers["Origin"] = base
            assert upload(client, 150 * KB).status_code == 200
            client.headers.clear()
            assert upload(client, 100 * KB).status_code == 200  # a script: no Origin
    finally:
        serving_state.close()


def test_a_download_is_served_from_its_folder_only_to_those_who_may_read_its_project(studio):
    """Issue 56, row 10: Gradio kept a copy of every report it handed out in its cache for a
    day, served to any session with the URL: a member removed from the project could still
    fetch its report, and the copies sat outside the downloads' cap (28 MB in 70 s). A download
    is now served from ``<data dir>/downloads`` itself (no copy), as an attachment, only to
    those who may read its project at the moment they ask."""
    import gradio.utils

    from app.services.projects.downloads import DOWNLOADS
    from app.services.projects.members import add_member, remove_member

    base, serving_state = studio
    from app.access import auth

    auth.add_user(serving_state.db, "eve", "designer", "eve-password-1")  # a member of nothing
    PASSWORDS_EVE = {"username": "eve", "password": "eve-password-1"}
    dana, vic, admin = browser(base, "dana"), browser(base, "vic"), browser(base, "admin")
    eve = httpx.Client(base_url=base, timeout=60)
    assert eve.post("/login", data=PASSWORDS_EVE).is_success

    done = gradio_event(dana, "report", [PROJECT, True], page_with_projects(dana))
    assert done["success"], done
    report = done["output"]["data"][0]["value"]
    path = Path(report["path"])
    assert path.is_relative_to(
        serving_state.settings.data_dir / DOWNLOADS
    )  # not a copy in the cache
    cache = Path(gradio.utils.get_upload_folder())
    body = path.read_bytes()
    assert not [f for f in cache.rglob("*.html") if f.read_bytes() == body]
    url = report["url"]
    for who in (dana, vic, admin):  # members and an admin
        got = who.get(url)
        assert got.status_code == 200 and got.content == body
        assert got.headers["content-disposition"].startswith("attachment")
    refused = eve.get(url)
    assert refused.status_code == 404 and "No such download" in refused.text
    remove_member(serving_state.db, live(serving_state, PROJECT), "dana")
    try:
        assert dana.get(url).status_code == 404  # removed: her old link serves nothing
    finally:
        add_member(serving_state.db, live(serving_state, PROJECT), "dana")


def test_signing_out_is_a_post_from_the_apps_own_page(studio):
    """Issue 56, row 10: signing out was a GET, so any site could sign a user out of every
    session with a link. ``GET /logout`` shows a Sign out button; a POST from another site is
    refused; the app's own POST signs out."""
    base, _ = studio
    dana = browser(base, "dana")
    assert dana.get("/config").status_code == 200
    page = dana.get("/logout", follow_redirects=False)
    assert page.status_code == 200 and "<form method='post'>" in page.text
    refused = dana.post("/logout", headers={"Origin": "https://evil.example"})
    assert refused.status_code == 403
    assert dana.get("/config").status_code == 200  # still signed in
    ended = dana.post("/logout", headers={"Origin": base}, follow_redirects=False)
    assert ended.status_code == 302
    assert dana.get("/config").status_code == 401


def test_the_security_log_keeps_what_a_hostile_user_tried_and_admins_read_it(studio, capsys):
    """Issue 56, row 11: the security log missed single failed sign-ins, denied calls
    (401/403/404), exports, report builds, bundle exports and openings, new projects and
    sign-outs, and nothing in the product showed it. Each is recorded with who and from where;
    admins read it in the Activity tab and with ``intent-studio audit``, by user and action."""
    from app.access import auth
    from app.access.auth import acting_as
    from app.cli import main
    from app.services.projects import bundles, members
    from app.services.projects.projects import new_project
    from app.ui.security_log import read_log

    base, serving_state = studio
    assert (
        httpx.post(
            f"{base}/login", data={"username": "dana", "password": "nope"}, timeout=60
        ).status_code
        == 400
    )
    token = auth.issue_token(serving_state.db, "dana")
    api = httpx.Client(base_url=f"{base}/api/v1", timeout=60)
    assert api.get("/projects").status_code == 401  # no token
    dana_api = httpx.Client(
        base_url=f"{base}/api/v1", timeout=60, headers={"Authorization": f"Bearer {token}"}
    )
    assert dana_api.get("/projects/secret-project/utterances").status_code == 404
    assert dana_api.get(f"/projects/{PROJECT}/export", params={"format": "csv"}).status_code == 200
    dana = browser(base, "dana")
    assert upload(dana, 1 * KB).status_code == 200
    with acting_as(members.actor_of(serving_state.db, "dana")):
        bundle = bundles.export_bundle(
            serving_state.live,
            live(serving_state, PROJECT).as_(members.actor_of(serving_state.db, "dana")),
            serving_state.settings.data_dir / "b.zip",
        )
    with acting_as(members.actor_of(serving_state.db, "admin")):
        new_project(serving_state.db, "audited")
    assert dana.post("/logout", headers={"Origin": base}, follow_redirects=False).status_code == 302
    time.sleep(1.0)  # the log is written off the event loop

    theirs = [(e["action"], e["detail"]) for e in security_log_of(serving_state, "dana")]
    actions = {a for a, _ in theirs}
    assert {"sign_in_failed", "denied", "exported", "bundle_exported", "signed_out"} <= actions
    assert any(a == "denied" and "secret-project" in d and "404" in d for a, d in theirs)
    assert bundle["path"]
    assert ("project_created", "'audited'") in [
        (e["action"], e["detail"]) for e in security_log_of(serving_state, "admin")
    ]

    # admins read it, by user and action, in the UI and from the command line
    frame, said = read_log(serving_state.db, "dana", "denied")
    assert set(frame["action"]) == {"denied"} and set(frame["user"]) == {"dana"}, frame
    assert "event(s) of dana, denied" in said
    data = ["--data-dir", str(serving_state.settings.data_dir)]
    capsys.readouterr()
    assert main([*data, "audit", "--user", "dana", "--action", "exported", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines and {row["action"] for row in lines} == {"exported"}
    assert main([*data, "audit", "--action", "nonsense"]) == 2


def security_log_of(serving_state, user: str) -> list[dict]:
    from app.services.projects.accounts import security_log

    return security_log(serving_state.db, 500, user=user)
