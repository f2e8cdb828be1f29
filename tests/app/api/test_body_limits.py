"""Issue 27, row 1: a REST body is refused before anything reads or parses it. Without a token
the answer is 401 at once, whatever the body says it holds; with one, a body over
``MAX_API_BODY_BYTES`` is 413, from its ``Content-Length`` or, chunked, at the first chunk past the
limit. The server runs on loopback and the requests are written byte by byte, as an attacker
would: before the fix the server waited for (and then parsed) the whole body."""

from __future__ import annotations

import json

import pytest

from app.limits import MAX_API_BODY_BYTES
from tests.app.live import raw_request, serving, status_of, team_context

URL = "/api/v1/projects/shop/predict"


@pytest.fixture
def rest(tmp_path):
    """The REST API of a team (multi-user) on loopback; yields (base URL, vic's token)."""
    from app.access import auth
    from app.api import create_api

    team = team_context(tmp_path / "data")
    token = auth.issue_token(team.db, "vic")
    with serving(create_api(team)) as base:
        yield base, token
    team.close()


def head(length: int | None, token: str = "") -> str:
    lines = [f"POST {URL} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json"]
    lines.append(
        f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
    )
    if token:
        lines.append(f"Authorization: Bearer {token}")
    return "\r\n".join(lines)


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def test_a_100_mb_body_without_a_token_is_answered_401_before_it_is_read(rest):
    base, _ = rest
    # says 100 MB, sends 1 KB and waits: the old server waited for the rest (then parsed it all)
    answer = raw_request(base, head(100 * 1024 * 1024), b'{"text": "' + b"x" * 1024, timeout=8)
    assert status_of(answer) == 401
    assert b"Authorization: Bearer TOKEN" in answer
    answer = raw_request(base, head(None), chunk(b'{"text": "' + b"x" * 1024), timeout=8)
    assert status_of(answer) == 401


def test_a_body_declared_over_the_limit_is_413_before_it_is_read(rest):
    base, token = rest
    answer = raw_request(base, head(MAX_API_BODY_BYTES + 1, token), b"{", timeout=8)
    assert status_of(answer) == 413
    assert b"larger than 2 MiB" in answer


def test_a_chunked_body_is_413_at_the_first_chunk_past_the_limit(rest):
    base, token = rest
    piece = b"x" * (256 * 1024)
    body = chunk(b'{"text": "hi", "k": 1, "pad": "') + b"".join(
        chunk(piece) for _ in range(MAX_API_BODY_BYTES // len(piece) + 1)
    )  # past the limit, and never finished: only a reader that stops can answer
    answer = raw_request(base, head(None, token), body, timeout=8)
    assert status_of(answer) == 413


def test_a_body_within_the_limit_is_answered(rest):
    base, token = rest
    body = json.dumps({"texts": [f"where is my parcel {i}" for i in range(50)]}).encode()
    answer = raw_request(base, head(len(body), token), body, timeout=60)
    assert status_of(answer) == 200
    assert answer.count(b'"top"') == 50


def test_single_user_mode_bounds_the_body_too(client):
    big = b'{"text": "' + b"x" * MAX_API_BODY_BYTES + b'"}'
    response = client.post(URL, content=big, headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    assert response.json() == {"error": "The request body is larger than 2 MiB."}
