"""The REST API on the real server (`intent-studio serve --multi-user`), over HTTP: the docs page,
a token issued by `intent-studio users token` while the server runs, predictions with it, and the
Gradio UI and its guarded /gradio_api/ routes still on the same port."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from urllib.parse import quote

import pytest

from tests.e2e.conftest import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def http(url: str, body: dict | None = None, token: str | None = None) -> tuple[int, str]:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=120) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_rest_predict_and_docs_over_http_beside_the_ui(team_server):
    srv = team_server
    data = srv.data_dir
    predict = srv.url + "api/v1/projects/" + quote("Demo: Acme support") + "/predict"

    status, page = http(srv.url + "docs")
    assert status == 200 and "swagger-ui-bundle.js" in page
    status, spec = http(srv.url + "openapi.json")
    assert status == 200 and "/api/v1/projects/{project}/predict" in json.loads(spec)["paths"]

    status, body = http(predict, {"text": "where is my parcel"})
    assert status == 401 and "Bearer" in json.loads(body)["error"]

    issued = subprocess.run(
        [sys.executable, "-m", "app", "--data-dir", str(data), "users", "token", "admin"],
        env=os.environ.copy(),
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    token = issued.stdout.strip().splitlines()[-1]
    status, body = http(predict, {"text": "where is my parcel"}, token)
    assert status == 200, body
    (prediction,) = json.loads(body)["predictions"]
    assert prediction["top"] == "track_order" and prediction["labels"] == ["track_order"]
    assert prediction["neighbours"] and "explanation" not in prediction

    status, body = http(
        predict, {"texts": ["cancel my order please", "I forgot my password"]}, token
    )
    assert status == 200 and len(json.loads(body)["predictions"]) == 2

    # the UI still answers on the same port, and its API still needs a session
    status, page = http(srv.url)
    assert status == 200
    status, _ = http(srv.url + "gradio_api/call/predict", {"data": ["x", "y", 1]})
    assert status == 401
