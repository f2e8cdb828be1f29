"""Issue 45, row 1, on the app ``serve`` runs in single-user mode (no sign-in) on loopback: it
answered any ``Host``, so a web page whose name was made to resolve to 127.0.0.1 (DNS rebinding)
could read and write the local app (reads 200, a label written). It serves only its own names
(127.0.0.1, localhost, [::1], and a name set in ``INTENT_STUDIO_PUBLIC_HOST``), anything else
gets 400 and changes nothing; and Gradio's credentialed CORS, which let any loopback origin (any
other local server's page) read the answers, allows only the app's own origin."""

from __future__ import annotations

import dataclasses

import httpx
import pytest

from app import web
from app.services.labelling import data as data_svc
from tests.app.live import free_port, serving
from tests.handles import live

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def studio(tmp_path_factory):
    """The single-user app on 127.0.0.1 with a project and ``studio.example`` as its public
    name; yields (base URL, port, context)."""
    from app.config import load_settings
    from app.services.projects.projects import new_project
    from app.serving.state import ServingState

    settings = load_settings(tmp_path_factory.mktemp("host") / "data")
    serving_state = ServingState.open(
        dataclasses.replace(settings, public_hosts=("studio.example",))
    )
    new_project(serving_state.db, "shop")
    data_svc.add_utterance(
        serving_state.db,
        live(serving_state, "shop"),
        "where is my parcel",
        ["track_order"],
        create=True,
    )
    port = free_port()
    with serving(web.web_app(serving_state, host="127.0.0.1", port=port), port=port) as base:
        yield base, port, serving_state
    serving_state.close()


def calls(base: str, host: str) -> list[httpx.Response]:
    """A read and a write over REST, the page, and Gradio's config, with ``Host: host``."""
    headers = {"Host": host}
    label = {"text": "track it please", "intents": ["track_order"]}
    return [
        httpx.get(f"{base}/api/v1/projects", headers=headers, timeout=60),
        httpx.post(f"{base}/api/v1/projects/shop/label", json=label, headers=headers, timeout=60),
        httpx.get(f"{base}/", headers=headers, timeout=60),
        httpx.get(f"{base}/config", headers=headers, timeout=60),
    ]


def texts(serving_state) -> list[str]:
    return [r["text"] for r in data_svc.table(serving_state.db, live(serving_state, "shop"))]


def test_another_host_name_is_refused_and_changes_nothing(studio):
    base, port, serving_state = studio
    for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", ""):
        answers = calls(base, host)
        assert [a.status_code for a in answers] == [400] * 4, host
        assert "INTENT_STUDIO_PUBLIC_HOST" in answers[0].json()["error"]
    assert texts(serving_state) == ["where is my parcel"]


def test_the_apps_own_names_are_served(studio):
    base, port, serving_state = studio
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "studio.example"):
        assert [a.status_code for a in calls(base, host)] == [200] * 4, host
    assert "track it please" in texts(serving_state)


@pytest.mark.parametrize("path", ["/config", "/gradio_api/info", "/api/v1/projects"])
def test_only_the_apps_own_origin_may_read_answers_across_origins(studio, path):
    base, port, _ = studio
    own = f"http://127.0.0.1:{port}"
    for origin in (f"http://localhost:{port + 1}", "http://127.0.0.1:3000", "null"):
        read = httpx.get(f"{base}{path}", headers={"Origin": origin})
        assert "access-control-allow-origin" not in read.headers, origin
        preflight = httpx.options(
            f"{base}{path}",
            headers={"Origin": origin, "Access-Control-Request-Method": "POST"},
        )
        assert "access-control-allow-origin" not in preflight.headers, origin
    read = httpx.get(f"{base}{path}", headers={"Origin": own})
    assert read.headers["access-control-allow-origin"] == own
    assert read.headers["access-control-allow-credentials"] == "true"
