"""Roles and login: argon2 hashes, server-side role checks on write paths, the first admin, the
last admin, and the refusal to bind a public address in single-user mode."""

from __future__ import annotations

import dataclasses

import pytest

from app.access import ProjectHandle, auth
from app.access.actions import LABEL
from app.cli import main
from app.services.labelling import data as data_svc
from app.services.labelling import history
from app.services.projects.members import add_member
from app.serving.state import ServingState
from app.ui import guard
from storage.tables import User
from storage.users import set_role
from tests.handles import live


@pytest.fixture
def team(serving_state):
    """A multi-user context with an admin, a designer and a viewer."""
    multi = ServingState.open(
        dataclasses.replace(serving_state.settings, multi_user=True), database=serving_state.db
    )
    auth.ensure_admin(multi.db, "admin-password")
    auth.add_user(multi.db, "dana", "designer", "designer-password")
    auth.add_user(multi.db, "vic", "viewer", "viewer-password")
    return multi


def test_passwords_are_stored_as_argon2_hashes_only(team):
    with team.db.session() as s:
        stored = {u.name: u.password_hash for u in s.query(User).all()}
    assert all(h.startswith("$argon2") for h in stored.values())
    assert not any("password" in h for h in stored.values())
    assert auth.check_login(team.db, "dana", "designer-password")
    assert not auth.check_login(team.db, "dana", "viewer-password")
    assert not auth.check_login(team.db, "nobody", "designer-password")
    with pytest.raises(ValueError, match="at least 8"):
        auth.add_user(team.db, "shorty", "viewer", "short")


def test_roles_are_checked_on_the_server(team):
    assert auth.require(team.db, team.settings.multi_user, "dana", "designer").name == "dana"
    assert auth.require(team.db, team.settings.multi_user, "admin", "designer").role == "admin"
    with pytest.raises(PermissionError, match="vic is a viewer: this needs the designer role"):
        auth.require(team.db, team.settings.multi_user, "vic", "designer")
    with pytest.raises(PermissionError, match="Sign in"):
        auth.require(team.db, team.settings.multi_user, None, "viewer")
    with pytest.raises(PermissionError, match="Unknown user"):
        auth.require(team.db, team.settings.multi_user, "mallory", "viewer")


def test_a_guarded_callback_refuses_a_viewer_and_changes_nothing(team, demo):
    class Request:  # what Gradio passes: the signed-in name
        def __init__(self, username: str) -> None:
            self.username = username

    def label(project: ProjectHandle, text: str) -> str:
        data_svc.add_utterance(team.db, live(team, project), text, ["track_order"])
        return "added"

    for name in ("dana", "vic"):  # members of the demo, each with their own role
        add_member(team.db, demo, name)
    guarded = guard.enforce(team, guard.guarded(LABEL)(label))
    before = len(data_svc.table(team.db, demo))
    refusal = guarded(str(demo), "where's my stuff now", request=Request("vic"))
    assert "needs the designer role" in refusal
    assert len(data_svc.table(team.db, demo)) == before
    assert guarded(str(demo), "where's my stuff now", request=Request("dana")) == "added"
    who = history.activity(team.db, demo)[0]
    assert who["user"] == "dana" and who["example"] == "where's my stuff now"
    assert who["intents"] == "track_order"


def test_the_first_admin_is_created_once_and_the_last_admin_stays(serving_state):
    generated = auth.ensure_admin(serving_state.db, None)
    assert generated and len(generated) >= 12
    assert auth.check_login(serving_state.db, "admin", generated)
    assert auth.ensure_admin(serving_state.db, None) is None
    with serving_state.db.session() as s, pytest.raises(ValueError, match="last admin"):
        set_role(s, "admin", "viewer")


def test_single_user_mode_refuses_a_public_address(tmp_path, capsys):
    assert main(["--data-dir", str(tmp_path), "serve", "--host", "0.0.0.0", "--no-demo"]) == 2
    assert "--multi-user" in capsys.readouterr().err


def test_a_token_issued_while_another_writer_commits_is_issued(team, monkeypatch):
    """CI failed once with "The database is busy" when an API token was issued while a failed
    sign-in was being written off the event loop: a plain transaction read the user, the other
    writer committed, and the stale read could no longer write (SQLite fails at once, whatever
    the busy timeout). A change that reads before it writes takes the write lock first
    (``Database.write``); a writer arriving meanwhile waits its turn and both are kept."""
    import threading

    from app.services.projects import accounts

    original = auth.set_token_hash
    other = threading.Thread(target=accounts.sign_in_failed, args=(team.db, "mallory", "10.0.0.9"))

    def after_another_write(s, *args, **kwargs):
        other.start()  # the user was read: this transaction has its snapshot
        other.join(timeout=1.0)  # committed by now, unless it waits for this transaction
        return original(s, *args, **kwargs)

    monkeypatch.setattr(auth, "set_token_hash", after_another_write)
    assert auth.token_actor(team.db, auth.issue_token(team.db, "dana")).name == "dana"
    other.join(timeout=20)
    assert [e["action"] for e in accounts.security_log(team.db, user="mallory")] == [
        "sign_in_failed"
    ]
