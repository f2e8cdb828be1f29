"""Multi-user mode in a real browser: sign in, a viewer may try predictions but every write is
refused on the server (UI and API), a designer may label, and the activity log names them."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

import pytest

from tests.e2e.conftest import PASSWORDS, shot

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def sign_in(page, url: str, name: str) -> None:
    page.goto(url)
    page.locator("input[type=text]").first.fill(name)
    page.locator("input[type=password]").first.fill(PASSWORDS[name])
    page.get_by_role("button", name="Login").click()
    page.wait_for_function(
        "(n) => document.querySelector('#project-summary')?.innerText?.includes('signed in as ' + n)",
        arg=name,
    )


def test_a_viewer_can_try_but_not_label(team_server, page):
    sign_in(page, team_server.url, "vic")
    shot(page, "20-viewer-signed-in")
    page.get_by_role("tab", name="Try").click()
    page.locator("#try-text textarea").fill("where is my parcel")
    page.locator("#try-predict").click()
    page.wait_for_function(
        "() => document.querySelector('#try-explanation')?.innerText?.includes('Predicted')"
    )
    page.locator("#try-label").click()
    page.wait_for_function(
        "() => document.body.innerText.includes('vic is a viewer: this needs the designer role')"
    )
    shot(page, "21-viewer-refused")


def test_the_api_refuses_a_viewer_and_accepts_a_designer(team_server):
    from gradio_client import Client

    viewer = Client(team_server.url, auth=("vic", PASSWORDS["vic"]), verbose=False)
    assert (
        viewer.predict("Demo: Acme support", "where is my parcel", 1, api_name="/predict")["top"]
        == "track_order"
    )
    with pytest.raises(Exception, match="designer role"):
        viewer.predict(
            "Demo: Acme support", "gift cards?", ["gift_cards"], "train", api_name="/label"
        )
    designer = Client(team_server.url, auth=("dana", PASSWORDS["dana"]), verbose=False)
    with pytest.raises(Exception, match="Unknown intent 'gift_cards'"):  # a typo is no intent
        designer.predict(
            "Demo: Acme support", "gift cards?", ["gift_cards"], "train", api_name="/label"
        )
    row = designer.predict(
        "Demo: Acme support", "gift cards?", ["gift_cards"], "train", True, api_name="/label"
    )
    assert row["labels"] == ["gift_cards"]


def test_the_activity_log_names_the_designer(team_server, page):
    sign_in(page, team_server.url, "admin")
    page.get_by_role("tab", name="Activity").click()
    page.wait_for_function(
        "() => document.querySelector('#activity')?.innerText?.includes('gift cards?')"
    )
    assert "dana" in page.locator("#activity").inner_text()
    shot(page, "22-activity")


def _status(url: str, *, method: str = "GET", body: bytes | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, data=body, method=method)
    req.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


def test_nothing_answers_without_a_session_and_nothing_leaks(team_server):
    base = team_server.url.rstrip("/")
    cancel = json.dumps({"session_hash": "x", "fn_index": 0, "event_id": "y"}).encode()
    assert _status(f"{base}/gradio_api/cancel", method="POST", body=cancel)[0] == 401
    assert _status(f"{base}/gradio_api/heartbeat/abc")[0] == 401
    assert _status(f"{base}/gradio_api/reset", method="POST", body=b"{}")[0] == 401
    assert _status(f"{base}/config")[0] == 401
    code, page = _status(base + "/")  # the sign-in page itself
    assert code == 200 and "Demo: Acme support" not in page
    assert _status(f"{base}/gradio_api/login_check")[0] == 401  # says "sign in", as Gradio does
    log = team_server.log.read_text()
    assert "Ignoring GRADIO_SHARE, GRADIO_VIBE_MODE" in log


def test_a_signed_in_user_gets_the_project_names_and_no_code_editing(team_server, page):
    sign_in(page, team_server.url, "vic")
    config = page.evaluate("async () => (await fetch('config')).json()")
    assert config["vibe_mode"] is False
    assert (
        "Demo: Acme support" in page.locator("#project").inner_text()
        or page.locator("#project input").input_value() == "Demo: Acme support"
    )


def test_an_upload_over_the_limit_is_refused_before_it_is_stored(team_server):
    """Red-team row 2: a viewer's 300 MiB upload used to be stored. (A designer's upload over the
    caps: tests/app/test_uploads.py.)"""
    import http.client
    import http.cookiejar

    from app.config import MAX_UPLOAD_BYTES

    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    login = urllib.parse.urlencode({"username": "vic", "password": PASSWORDS["vic"]}).encode()
    opener.open(team_server.url + "login", data=login, timeout=10)
    cookie = "; ".join(f"{c.name}={c.value}" for c in jar)
    # The headers alone, as a client that waits before its body: the answer comes from the
    # declared size, before a byte of the body is read (urllib sent the whole 25 MiB and was reset
    # part-way by the server's refusal).
    conn = http.client.HTTPConnection(urllib.parse.urlsplit(team_server.url).netloc, timeout=60)
    try:
        conn.putrequest("POST", "/gradio_api/upload")
        conn.putheader("Content-Type", "multipart/form-data; boundary=studio-boundary")
        conn.putheader("Content-Length", str(MAX_UPLOAD_BYTES + 1024))
        conn.putheader("Cookie", cookie)
        conn.endheaders()
        refused = conn.getresponse()
        # a viewer may not upload at all: refused by role before the size is even looked at
        assert refused.status == 403 and b"viewer" in refused.read()
    finally:
        conn.close()
