"""API tokens from the command line: printed once, kept only as a hash, a new one replaces the
old, and an unknown user is refused with exit status 2."""

from __future__ import annotations

import dataclasses
import hashlib

from fastapi.testclient import TestClient

from app.cli import main
from tests.app.api.conftest import bearer


def issue(data_dir, name, capsys) -> str:
    assert main(["--data-dir", str(data_dir), "users", "token", name]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith(f"API token for {name} (shown once")
    return lines[-1]


def test_users_token_prints_a_token_once_and_a_new_one_replaces_it(tmp_path, capsys, monkeypatch):
    from app.api import create_api
    from app.config import load_settings
    from app.serving.state import ServingState
    from storage.users import get_user

    data = tmp_path / "data"
    monkeypatch.setenv("INTENT_STUDIO_PASSWORD", "viewer-password")
    assert main(["--data-dir", str(data), "users", "add", "vic", "--role", "viewer"]) == 0
    capsys.readouterr()
    first = issue(data, "vic", capsys)
    second = issue(data, "vic", capsys)
    assert first != second

    serving_state = ServingState.open(dataclasses.replace(load_settings(data), multi_user=True))
    try:
        with serving_state.db.session() as s:  # only the hash is stored
            assert get_user(s, "vic").api_token_hash == hashlib.sha256(second.encode()).hexdigest()
        with TestClient(create_api(serving_state)) as client:
            url = "/api/v1/projects/none/versions"
            assert client.get(url, headers=bearer(first)).status_code == 401
            # the second token is vic's: past the token check to the (unknown) project
            assert client.get(url, headers=bearer(second)).json() == {"error": "No project 'none'."}
    finally:
        serving_state.close()

    assert main(["--data-dir", str(data), "users", "token", "nobody"]) == 2
    assert "No user 'nobody'." in capsys.readouterr().err
