"""Issue 64, items 1 and 4, at the Gradio API's doors, on the app ``serve`` runs (multi-user, on
loopback): every public endpoint (enumerated from the app's own ``/gradio_api/info``, not a list
kept here) answers in the app's words.

- A project the caller may not see answers exactly as one that does not exist ("No project
  'x'."), whatever the endpoint. Before, ``/gradio_api/call/utterances`` answered Gradio's
  internal "Api.__init__() got an unexpected keyword argument 'render'" (a refusal returned as a
  component update to an API endpoint), and every event of the page Gradio's own "Value: x is
  not in the list of choices: []" (the project picker's check), a member's call too.
- Every id an endpoint takes (a whole number, or a text of ids) refuses 2**63, 2**64, -1, 0,
  1.5, "1e3" and an empty string with a message: no bug report, no traceback in the log. Before,
  an utterance id of 2**63 was an OverflowError ("Something went wrong", logged as a bug)."""

from __future__ import annotations

import html
import json
import logging
import re
from typing import Any

import httpx
import pytest

from app import web
from app.access import auth
from app.services.projects.projects import new_project
from tests.app.live import PASSWORDS, PROJECT, serving, team_context

HOSTILE: list[Any] = [2**63, 2**64, -1, 0, 1.5, "1e3", ""]
GRADIOS_WORDS = ("Api.__init__", "is not in the list of choices", "Something went wrong")
PASSWORDS = {**PASSWORDS, "eve": "eve-password"}


@pytest.fixture(scope="module")
def studio(tmp_path_factory):
    """The team's app on loopback; eve, a designer, is a member of no project; "hidden" is a
    project nobody but the admin sees. Yields (base URL, the endpoints' info)."""
    serving_state = team_context(tmp_path_factory.mktemp("studio") / "data")
    auth.add_user(serving_state.db, "eve", "designer", PASSWORDS["eve"])
    new_project(serving_state.db, "hidden")
    with serving(web.web_app(serving_state, host="127.0.0.1", port=0)) as base:
        info = signed_in(base, "dana").get("/gradio_api/info").json()["named_endpoints"]
        yield base, info
    serving_state.close()


def signed_in(base: str, name: str) -> httpx.Client:
    client = httpx.Client(base_url=base, timeout=120)
    assert client.post("/login", data={"username": name, "password": PASSWORDS[name]}).is_success
    return client


def call(client: httpx.Client, endpoint: str, data: list[Any]) -> tuple[str, Any]:
    """(``complete`` or ``error``, the answer's data) of one call of a public endpoint."""
    started = client.post(f"/gradio_api/call{endpoint}", json={"data": data})
    assert started.status_code == 200, started.text
    answer = client.get(f"/gradio_api/call{endpoint}/{started.json()['event_id']}").text
    events = re.findall(r"^event: (\w+)\ndata: (.*)$", answer, re.M)
    kind, payload = next((k, d) for k, d in events if k in ("complete", "error"))
    return kind, json.loads(payload)


def _arguments(params: list[dict[str, Any]], project: str) -> list[Any]:
    """A call's arguments: the project, each id 1 (an utterance of the project), a list of texts
    one text, every other value its default (else a value of its type: every value is checked
    by type first, issue 73)."""
    out: list[Any] = []
    for i, p in enumerate(params):
        if p["parameter_name"] in ("p", "project"):
            out.append(project)
        elif i in (ids := dict(_id_parameters(params))):
            out.append({"in a list": [1], "as text": "1"}.get(ids[i], 1))
        elif p.get("python_type", {}).get("type") == "list[str]" and p["component"] == "Api":
            out.append(["where is my parcel"])
        else:
            out.append(p["parameter_default"] if p["parameter_has_default"] else _of_its_type(p))
    return out


def _of_its_type(param: dict[str, Any]) -> Any:
    """A value of the type a parameter takes, as ``/gradio_api/info`` says it (None: any, or a
    picker left empty)."""
    if param["component"] in ("Dropdown", "Radio", "Number"):
        return None
    kinds = _schema_types(param.get("type", {}))
    for kind, value in (("string", ""), ("integer", 1), ("boolean", False), ("array", [])):
        if kind in kinds:
            return value
    return None


def _project_endpoints(info: dict[str, Any]) -> list[str]:
    """The endpoints that take a project (Gradio numbers the repeats of one callback, ``refresh``,
    ``refresh_1``...: one of them stands for all)."""
    found: dict[str, str] = {}
    for name, ep in sorted(info.items()):
        if any(p["parameter_name"] in ("p", "project") for p in ep["parameters"]):
            found.setdefault(re.sub(r"_\d+$", "", name), name)
    return sorted(found.values())


def test_every_endpoint_answers_a_hidden_project_as_a_missing_one_in_the_apps_words(studio):
    base, info = studio
    eve = signed_in(base, "eve")
    endpoints = _project_endpoints(info)
    assert {"/utterances", "/label", "/predict", "/predict_batch"} <= set(endpoints)
    assert len(endpoints) >= 20  # the page's events too: retrain, report, save_utterance, ...
    wrong = []
    for endpoint in endpoints:
        params = info[endpoint]["parameters"]
        hidden = call(eve, endpoint, _arguments(params, "hidden"))
        missing = call(eve, endpoint, _arguments(params, "missing"))
        said = html.unescape(json.dumps(hidden)).replace("hidden", "missing")
        same = said == html.unescape(json.dumps(missing))
        if not same or "No project 'missing'." not in said or any(w in said for w in GRADIOS_WORDS):
            wrong.append((endpoint, hidden, missing))
    assert wrong == []
    # and a member's calls are answered: the API's endpoints still return what they return
    dana = signed_in(base, "dana")
    assert call(dana, "/projects", []) == ("complete", [[PROJECT]])
    kind, (rows,) = call(dana, "/utterances", [PROJECT, "", "", ""])
    assert kind == "complete" and len(rows) == 6 and rows[0]["text"] == "where is my parcel"


def _id_parameters(params: list[dict[str, Any]]) -> list[tuple[int, str]]:
    """(position, how it is sent) of each parameter that is an id or a whole number: a number
    input or an API endpoint's integer (``as is``: a page, an utterance's id or version), a list
    of integers (``in a list``: the batched ``predict``'s k), a text of ids (``as text``). A
    number that is no count (a setting's weight) is not one."""
    out = []
    for i, p in enumerate(params):
        kind = p.get("python_type", {}).get("type")
        named = re.search(r"(^|_)(ids?|uid|version)(_|$)", p["parameter_name"])
        if p["component"] in ("Number", "Api") and (kind == "int" or named):
            out.append((i, "as is"))
        elif p["component"] == "Api" and kind == "list[int]":
            out.append((i, "in a list"))
        elif named:
            out.append((i, "as text"))
    return out


def test_every_id_of_every_endpoint_refuses_what_is_no_id_in_the_apps_words(studio, caplog, capfd):
    base, info = studio
    dana = signed_in(base, "dana")
    seen: set[tuple[str, str]] = set()  # Gradio numbers repeats of one callback: refresh_1, ...
    tried, wrong = 0, []
    with caplog.at_level(logging.ERROR):
        for endpoint, ep in sorted(info.items()):
            params = ep["parameters"]
            for i, how in _id_parameters(params):
                key = (re.sub(r"_\d+$", "", endpoint), params[i]["parameter_name"])
                if key in seen:
                    continue
                seen.add(key)
                for bad in HOSTILE:
                    data = _arguments(params, PROJECT)
                    data[i] = {"as text": str(bad), "in a list": [bad]}.get(how, bad)
                    kind, answer = call(dana, endpoint, data)
                    tried += 1
                    said = json.dumps(answer, ensure_ascii=False)
                    changed = "✓" in said  # the app's mark of a change made: never
                    if (
                        changed
                        or any(words in said for words in GRADIOS_WORDS)
                        or (kind == "error" and not answer.get("error"))
                    ):
                        wrong.append((endpoint, params[i]["parameter_name"], bad, kind, said[:160]))
    assert {k[0] for k in seen} >= {"/save_utterance", "/map_label", "/predict", "/refresh"}
    assert tried >= 40
    assert wrong == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert "Traceback" not in capfd.readouterr().err


# Issue 73, items 4 and 9: a value of another JSON type for every parameter of every endpoint.
# (1.5, objects and null at every input of every event: tests/app/ui/test_event_numbers.py)
WRONG_TYPES: list[Any] = ["x", 7, True, ["x"]]
# A bug, or Gradio's words for a value its component could not read. (A text that is no choice of
# a dropdown is Gradio's "Value: x is not in the list of choices": a value of the right type.)
BUG_WORDS = ("Something went wrong", "Could not preprocess", "Api.__init__", "Traceback")
JSON_TYPE = {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null"}
JSON_TYPE |= {list: "array", dict: "object"}


def _schema_types(schema: dict[str, Any]) -> set[str]:
    """The JSON types an endpoint's parameter takes, as ``/gradio_api/info`` says (empty:
    anything, or not said)."""
    if "anyOf" in schema:
        return set().union(*(_schema_types(s) for s in schema["anyOf"]))
    kind = schema.get("type")
    if kind == "number":
        return {"number", "integer"}
    return {str(kind)} if isinstance(kind, str) else set()


def test_every_parameter_of_every_endpoint_refuses_another_type_in_the_apps_words(
    studio, caplog, capfd
):
    """Before, 54 of 645 odd payloads ended in "Something went wrong (AttributeError): a bug,
    logged on the server", a viewer's ``/call/predict {"data": ["Q", 5, 3]}`` among them, and
    JSON ``true`` was taken as 1 (``auto_retrain_after``). Now every value of another JSON type
    than a parameter takes (as ``/gradio_api/info`` says it) is refused at the door in the app's
    words ("`text` takes a text, not 5."), before the event runs; nothing is logged as a bug.
    (What a value of the right type, or null, does once it runs: tests/app/ui/
    test_event_numbers.py, at every input of every event.)"""
    base, info = studio
    dana = signed_in(base, "dana")
    seen: set[tuple[str, str]] = set()
    tried, wrong = 0, []
    with caplog.at_level(logging.ERROR):
        for endpoint, ep in sorted(info.items()):
            params = ep["parameters"]
            for i, p in enumerate(params):
                key = (re.sub(r"_\d+$", "", endpoint), p["parameter_name"])
                takes = _schema_types(p.get("type", {}))
                if key in seen or not takes:
                    continue
                seen.add(key)
                for bad in WRONG_TYPES:
                    if JSON_TYPE[type(bad)] in takes:
                        continue
                    data = _arguments(params, PROJECT)
                    data[i] = bad
                    kind, answer = call(dana, endpoint, data)
                    tried += 1
                    said = html.unescape(json.dumps(answer, ensure_ascii=False))
                    if (
                        kind != "error"
                        or f"`{p['parameter_name']}` takes" not in answer.get("error", "")
                        or any(words in said for words in BUG_WORDS)
                    ):
                        wrong.append((endpoint, p["parameter_name"], bad, kind, said[:160]))
    assert tried >= 200, tried
    assert wrong == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert "Traceback" not in capfd.readouterr().err
    vic = signed_in(base, "vic")  # the issue's own call, a viewer's
    kind, answer = call(vic, "/predict", [PROJECT, 5, 3])
    assert (kind, answer["error"]) == ("error", "`text` takes a text, not 5. Nothing was changed.")
