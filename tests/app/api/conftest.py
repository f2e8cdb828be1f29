from __future__ import annotations

import dataclasses

import pytest
from fastapi.testclient import TestClient


@pytest.fixture
def client(serving_state, demo):
    """The REST API in single-user local mode on the demo project (no token needed)."""
    from app.api import create_api

    with TestClient(create_api(serving_state)) as c:
        yield c


@pytest.fixture
def team(serving_state, demo):
    """The same data in multi-user mode: an admin, a designer (dana) and a viewer (vic), both
    members of the demo project, each with an API token; yields (client, tokens by name)."""
    from app.access import auth
    from app.api import create_api
    from app.services.projects.members import add_member
    from app.serving.state import ServingState

    multi = ServingState.open(
        dataclasses.replace(serving_state.settings, multi_user=True), database=serving_state.db
    )
    multi.training.enqueue = serving_state.training.enqueue
    auth.ensure_admin(multi.db, "admin-password")
    auth.add_user(multi.db, "dana", "designer", "designer-password")
    auth.add_user(multi.db, "vic", "viewer", "viewer-password")
    for name in ("dana", "vic"):
        add_member(serving_state.db, demo, name)
    tokens = {name: auth.issue_token(multi.db, name) for name in ("admin", "dana", "vic")}
    with TestClient(create_api(multi)) as c:
        yield c, tokens


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
