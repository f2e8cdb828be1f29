"""Issue 27, rows 4 and 11: an admin removes, locks, unlocks a user or sets a new password from
the command line, each recorded in the security log; a removed or locked user signs in with
nothing and their token stops; the last admin stays. And a sign-in for a name that does not exist
costs the same password check as one that does, so its time does not tell which names exist."""

from __future__ import annotations

import dataclasses
import statistics
import time

import pytest

from app.access import auth
from app.cli import main
from app.config import load_settings
from app.services.projects.accounts import security_log
from app.serving.state import ServingState


@pytest.fixture
def team(tmp_path, monkeypatch):
    """A data directory with an admin and dana (designer) with an API token; yields (run the
    CLI on it, a multi-user context on it, dana's token)."""
    data = tmp_path / "data"

    def cli(*argv: str) -> int:
        return main(["--data-dir", str(data), *argv])

    serving_state = ServingState.open(dataclasses.replace(load_settings(data), multi_user=True))
    auth.ensure_admin(serving_state.db, "admin-password")
    auth.add_user(serving_state.db, "dana", "designer", "designer-password")
    token = auth.issue_token(serving_state.db, "dana")
    monkeypatch.delenv("INTENT_STUDIO_PASSWORD", raising=False)
    yield cli, serving_state, token
    serving_state.close()


SETUP = [("token_issued", "dana"), ("added", "dana"), ("added", "admin")]  # the fixture's


def since_setup(serving_state) -> list[dict]:
    """The security log without the fixture's own three events (newest first)."""
    log = security_log(serving_state.db)
    assert [(e["action"], e["user"]) for e in log[-3:]] == SETUP
    return log[:-3]


def test_adding_a_user_and_issuing_a_token_are_in_the_security_log(team, capsys, monkeypatch):
    """Issue 43, hole 6: `users add` and `users token` left no trace in the security log."""
    cli, serving_state, _ = team
    assert [
        (e["action"], e["user"], e["actor"], e["detail"]) for e in security_log(serving_state.db)
    ] == [
        ("token_issued", "dana", "", ""),
        ("added", "dana", "", "role designer"),
        ("added", "admin", "first start", "role admin"),
    ]
    monkeypatch.setenv("INTENT_STUDIO_PASSWORD", "viewer-password")
    assert cli("users", "add", "vic", "--role", "viewer") == 0
    assert cli("users", "token", "vic") == 0
    assert cli("users", "token", "vic") == 0
    token = capsys.readouterr().out.splitlines()[-1]
    logged = [(e["action"], e["user"], e["detail"]) for e in since_setup(serving_state)]
    assert logged == [
        ("token_issued", "vic", "it replaces the earlier token"),
        ("token_issued", "vic", ""),
        ("added", "vic", "role viewer"),
    ]
    assert all(e["actor"].startswith("cli") for e in since_setup(serving_state))
    assert all(
        token not in str(e) for e in security_log(serving_state.db)
    )  # never the token itself
    assert cli("users", "token", "nobody") == 2  # nothing issued, nothing logged
    assert len(since_setup(serving_state)) == 3


def test_users_lock_stops_sign_in_sessions_and_token_until_unlock(team, capsys):
    cli, serving_state, token = team
    assert cli("users", "lock", "dana") == 0
    assert "Locked dana" in capsys.readouterr().out
    assert not auth.check_login(serving_state.db, "dana", "designer-password")
    with pytest.raises(PermissionError, match="Unknown or revoked API token"):
        auth.token_actor(serving_state.db, token)
    with pytest.raises(PermissionError, match="dana is locked"):
        auth.require(serving_state.db, serving_state.settings.multi_user, "dana", "viewer")
    assert cli("users", "unlock", "dana") == 0
    assert auth.check_login(serving_state.db, "dana", "designer-password")
    assert auth.token_actor(serving_state.db, token).name == "dana"
    assert [(e["action"], e["user"]) for e in since_setup(serving_state)] == [
        ("unlocked", "dana"),
        ("locked", "dana"),
    ]
    assert all(e["actor"].startswith("cli") for e in since_setup(serving_state))


def test_users_password_replaces_the_password_and_is_logged(team, capsys, monkeypatch):
    cli, serving_state, _ = team
    monkeypatch.setenv("INTENT_STUDIO_PASSWORD", "a-new-password")
    assert cli("users", "password", "dana") == 0
    assert "New password for dana" in capsys.readouterr().out
    assert auth.check_login(serving_state.db, "dana", "a-new-password")
    assert not auth.check_login(serving_state.db, "dana", "designer-password")
    assert security_log(serving_state.db)[0]["action"] == "password"
    monkeypatch.setenv("INTENT_STUDIO_PASSWORD", "short")
    assert cli("users", "password", "dana") == 2
    assert "at least 8" in capsys.readouterr().err


def test_users_remove_ends_everything_and_keeps_the_name_in_the_log(team, capsys, monkeypatch):
    cli, serving_state, token = team
    assert cli("users", "remove", "dana") == 0
    assert not auth.check_login(serving_state.db, "dana", "designer-password")
    with pytest.raises(PermissionError):
        auth.token_actor(serving_state.db, token)
    with pytest.raises(PermissionError, match="Unknown user 'dana'"):
        auth.require(serving_state.db, serving_state.settings.multi_user, "dana", "viewer")
    capsys.readouterr()
    assert cli("users", "list") == 0
    assert "dana\tdesigner\tremoved" in capsys.readouterr().out
    assert cli("users", "lock", "dana") == 2  # nobody to lock
    assert "No user 'dana'" in capsys.readouterr().err
    assert security_log(serving_state.db)[0]["action"] == "removed"


def test_users_add_refuses_a_removed_users_name_and_restore_brings_them_back(
    team, capsys, monkeypatch
):
    """Issue 43, hole 6: `users add dana` after `users remove dana` silently gave the removed
    account (and its past edits) back under a new password. It is refused, saying how to bring
    dana back on purpose; `users restore` does, and is logged."""
    cli, serving_state, token = team
    assert cli("users", "remove", "dana") == 0
    capsys.readouterr()
    monkeypatch.setenv("INTENT_STUDIO_PASSWORD", "another-password")
    assert cli("users", "add", "dana", "--role", "viewer") == 2
    err = capsys.readouterr().err
    assert "'dana' is the name of a removed user" in err
    assert "`intent-studio users restore dana`" in err and "Nothing was changed" in err
    assert not auth.check_login(serving_state.db, "dana", "another-password")
    assert [e["action"] for e in since_setup(serving_state)] == ["removed"]

    assert cli("users", "restore", "dana") == 0
    assert "Restored dana (designer)" in capsys.readouterr().out  # the role dana had
    assert auth.check_login(serving_state.db, "dana", "another-password")
    assert (
        auth.require(serving_state.db, serving_state.settings.multi_user, "dana", "designer").name
        == "dana"
    )
    with pytest.raises(PermissionError):  # the old token stays dead
        auth.token_actor(serving_state.db, token)
    restored = since_setup(serving_state)[0]
    assert (restored["action"], restored["user"], restored["detail"]) == (
        "restored",
        "dana",
        "role designer",
    )
    assert restored["actor"].startswith("cli")
    assert cli("users", "restore", "dana") == 2  # active: nothing to restore
    assert "dana is active, not removed" in capsys.readouterr().err
    assert cli("users", "restore", "nobody") == 2
    assert "No removed user 'nobody'" in capsys.readouterr().err
    assert cli("users", "remove", "dana") == 0
    assert cli("users", "restore", "dana", "--role", "viewer") == 0
    assert (
        auth.require(serving_state.db, serving_state.settings.multi_user, "dana", "viewer").role
        == "viewer"
    )


def test_the_last_admin_can_be_neither_removed_nor_locked(team, capsys):
    cli, serving_state, _ = team
    for action in ("remove", "lock"):
        assert cli("users", action, "admin") == 2
        assert "last admin" in capsys.readouterr().err
    assert auth.check_login(serving_state.db, "admin", "admin-password")
    assert since_setup(serving_state) == []


def test_an_unknown_name_costs_the_same_password_check_as_a_known_one(team, monkeypatch):
    _, serving_state, _ = team
    checks: list[str] = []

    class Counted:  # the app's hasher, counting its checks
        def __init__(self, hasher: object) -> None:
            self.hasher = hasher

        def hash(self, password: str) -> str:
            return self.hasher.hash(password)  # type: ignore[attr-defined, no-any-return]

        def verify(self, stored: str, password: str) -> bool:
            checks.append(stored[:9])
            return self.hasher.verify(stored, password)  # type: ignore[attr-defined, no-any-return]

    monkeypatch.setattr(auth, "_hasher", Counted(auth._hasher))
    auth.check_login(serving_state.db, "nobody", "a password")  # the dummy hash is made once, here

    def timed(name: str) -> float:
        started = time.perf_counter()
        assert not auth.check_login(serving_state.db, name, "wrong password")
        return time.perf_counter() - started

    checks.clear()
    known = statistics.median(timed("dana") for _ in range(5))
    unknown = statistics.median(timed("nobody") for _ in range(5))
    assert checks == ["$argon2id"] * 10  # one argon2 check per attempt, known or not
    # before: 0.47 s for a known name, 0.057 s for an unknown one (a ratio of 0.12)
    assert 0.5 < unknown / known < 2


def test_users_revoke_ends_the_token_only_and_is_logged(team, capsys):
    cli, serving_state, token = team
    assert cli("users", "revoke", "dana") == 0
    assert "Revoked dana's API token" in capsys.readouterr().out
    with pytest.raises(PermissionError, match="Unknown or revoked API token"):
        auth.token_actor(serving_state.db, token)
    assert auth.check_login(
        serving_state.db, "dana", "designer-password"
    )  # the password still signs in
    assert (
        auth.require(serving_state.db, serving_state.settings.multi_user, "dana", "designer").name
        == "dana"
    )
    assert security_log(serving_state.db)[0]["action"] == "token_revoked"
    assert all(e["actor"].startswith("cli") for e in since_setup(serving_state))
    assert cli("users", "revoke", "nobody") == 2
    assert "No user 'nobody'" in capsys.readouterr().err


def test_users_role_without_a_role_says_it_and_demotes_nobody(team, capsys):
    cli, serving_state, _ = team
    auth.add_user(serving_state.db, "ada", "admin", "admin-password-2")
    assert cli("users", "role", "ada") == 2
    assert "ada's role is admin; nothing was changed" in capsys.readouterr().err
    assert (
        auth.require(serving_state.db, serving_state.settings.multi_user, "ada", "admin").role
        == "admin"
    )  # unchanged
    assert [e["action"] for e in since_setup(serving_state)] == ["added"]

    assert cli("users", "role", "ada", "--role", "viewer") == 0
    assert "ada is now a viewer" in capsys.readouterr().out
    assert (
        auth.require(serving_state.db, serving_state.settings.multi_user, "ada", "viewer").role
        == "viewer"
    )
    assert [(e["action"], e["detail"]) for e in since_setup(serving_state)][:1] == [
        ("role", "admin -> viewer")
    ]
    assert cli("users", "role", "admin", "--role", "designer") == 2  # the last admin stays
    assert "last admin" in capsys.readouterr().err


def test_a_failed_security_log_write_is_logged_and_a_programming_error_is_raised(tmp_path, caplog):
    """Issue 59: a record that cannot be written (the database is not there) is logged with its
    traceback and the action stands; a programming error in the same place (here: a database
    that is not one) is raised, never swallowed as a missing record."""
    from app.access.auth import LOCAL
    from app.services.projects.accounts import record
    from storage.db import Database, sqlite_url

    gone = Database(sqlite_url(tmp_path / "no" / "such" / "dir.db"), apply_migrations=False)
    try:
        with caplog.at_level("ERROR", logger="app.services.projects.accounts"):
            record(gone, "exported", "a file", who=LOCAL)  # logged, not raised
        assert "could not write exported to the security log" in caplog.text
        assert "Traceback" in caplog.text or caplog.records[-1].exc_info is not None
    finally:
        gone.dispose()
    with pytest.raises(AttributeError):
        record(object(), "exported", "a file", who=LOCAL)  # type: ignore[arg-type]
