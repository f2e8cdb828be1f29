"""Issue 27, row 10, on the app ``serve`` runs (multi-user) on loopback: every request checks its
user. A user removed (by ``users remove``, or straight from the database), locked, or whose
password changed loses their open browser session at their next request, on the page and on
``/gradio_api/call/predict`` alike, and a removed or locked user's API token stops too. Before,
Gradio's sessions lived in memory and kept answering, training utterances included."""

from __future__ import annotations

import httpx
import pytest

from app import web
from app.cli import main
from storage.tables import User
from tests.app.live import PASSWORDS, PROJECT, serving, team_context


@pytest.fixture
def studio(tmp_path):
    """A team's app on loopback; yields (base URL, context, run the CLI on its data)."""
    from app.access import auth

    data = tmp_path / "data"
    serving_state = team_context(data)
    token = auth.issue_token(serving_state.db, "dana")

    def cli(*argv: str) -> int:
        return main(["--data-dir", str(data), *argv])

    with serving(web.web_app(serving_state, host="127.0.0.1", port=0)) as base:
        yield base, serving_state, cli, token
    serving_state.close()


def browser(base: str, name: str = "dana") -> httpx.Client:
    """A client signed in as ``name`` (its session cookie kept)."""
    client = httpx.Client(base_url=base, timeout=60)
    answer = client.post("/login", data={"username": name, "password": PASSWORDS[name]})
    assert answer.status_code == 200
    return client


def call_predict(client: httpx.Client) -> int | str:
    """``/gradio_api/call/predict`` on one utterance: its result text, or the refusal's status."""
    started = client.post(
        "/gradio_api/call/predict", json={"data": [PROJECT, "where is my parcel", 1]}
    )
    if started.status_code != 200:
        return started.status_code
    answer = client.get(f"/gradio_api/call/predict/{started.json()['event_id']}")
    if answer.status_code != 200:
        return answer.status_code
    return answer.text


def rest_predict(base: str, token: str) -> int:
    return httpx.post(
        f"{base}/api/v1/projects/{PROJECT}/predict",
        json={"text": "where is my parcel"},
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    ).status_code


def signed_out(client: httpx.Client) -> bool:
    """The page no longer shows the app to this client (Gradio's config names the projects)."""
    return client.get("/gradio_api/login_check").status_code == 401


def test_users_remove_ends_the_session_and_token_at_the_next_request(studio, capsys):
    base, _, cli, token = studio
    dana = browser(base)
    assert "track_order" in str(call_predict(dana))
    assert rest_predict(base, token) == 200
    assert cli("users", "remove", "dana") == 0  # another process, the same database
    assert call_predict(dana) == 401
    assert signed_out(dana)
    assert rest_predict(base, token) == 401
    again = dana.post("/login", data={"username": "dana", "password": PASSWORDS["dana"]})
    assert again.status_code == 400


def test_a_user_deleted_from_the_database_gets_no_more_answers(studio):
    base, serving_state, _, token = studio
    dana = browser(base)
    assert "track_order" in str(call_predict(dana))
    with serving_state.db.session() as s:  # as an admin with SQL would
        s.delete(s.query(User).filter_by(name="dana").one())
    assert call_predict(dana) == 401
    assert rest_predict(base, token) == 401


def test_lock_and_a_new_password_end_the_sessions_signed_in_before(studio, monkeypatch):
    base, _, cli, token = studio
    dana, vic = browser(base), browser(base, "vic")
    assert cli("users", "lock", "dana") == 0
    assert call_predict(dana) == 401 and rest_predict(base, token) == 401
    assert cli("users", "unlock", "dana") == 0
    assert call_predict(dana) == 401  # the session stays ended; the token works again
    assert rest_predict(base, token) == 200
    assert "track_order" in str(call_predict(vic))
    monkeypatch.setenv("INTENT_STUDIO_PASSWORD", "vics-new-password")
    assert cli("users", "password", "vic") == 0
    assert call_predict(vic) == 401
    again = httpx.Client(base_url=base, timeout=60)
    answer = again.post("/login", data={"username": "vic", "password": "vics-new-password"})
    assert answer.status_code == 200
    assert "track_order" in str(call_predict(again))
