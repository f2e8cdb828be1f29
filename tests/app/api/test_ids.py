"""Issue 64, item 1: an id that is no id answers 4xx at every REST door, never 500. Every route
and every whole number it takes (a path segment, a query parameter, a body field: enumerated
from the app's own routes and schema, not a list kept here) is tried with 2**63, 2**64, -1, 0,
1.5, "1e3" and an empty string: each is refused with a JSON message and a 4xx, nothing reaches
the database and nothing is logged as an error. Before, `GET /jobs/100000000000000000000` was a
500 (OverflowError in the SQLite driver) with a traceback, and so were 8 other routes."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from storage.ids import MAX_ID

HOSTILE: list[Any] = [2**63, 2**64, -1, 0, 1.5, "1e3", ""]
# path segments that name a project, an intent or a user: every other one is an id
NAMES = {"project": None, "intent": "track_order", "user": "local"}


def _schema(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its ``$ref`` resolved and a ``X | None`` read as ``X``."""
    if "$ref" in schema:
        return _schema(spec, spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]])
    options = [s for s in schema.get("anyOf", []) if s.get("type") != "null"]
    return _schema(spec, options[0]) if len(options) == 1 else schema


def _example(spec: dict[str, Any], schema: dict[str, Any]) -> Any:
    """A value ``schema`` takes: a body whose every other field is fine, so that the field tried
    is the one refused."""
    schema = _schema(spec, schema)
    kind = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        props = schema.get("properties", {})
        return {name: _example(spec, props[name]) for name in schema.get("required", [])} | {
            name: True for name, p in props.items() if _schema(spec, p).get("type") == "boolean"
        }
    if kind == "array":
        return [_example(spec, schema["items"])] if schema.get("minItems") else []
    return {"integer": 1, "number": 0.5, "boolean": True}.get(str(kind), "x")


def _integers(
    spec: dict[str, Any], schema: dict[str, Any], path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], bool, dict[str, Any]]]:
    """(where, in a list, its schema) of each whole number a body takes."""
    schema = _schema(spec, schema)
    if schema.get("type") == "integer":
        yield path, False, schema
    elif schema.get("type") == "array" and _schema(spec, schema["items"]).get("type") == "integer":
        yield path, True, _schema(spec, schema["items"])
    for name, prop in schema.get("properties", {}).items():
        yield from _integers(spec, prop, (*path, name))


def _doors(api: Any) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(method, path, its OpenAPI operation) of every route of the app (its schema is made from
    its routes: the fallback of unknown paths and the docs page are all it leaves out)."""
    for path, operations in api.openapi()["paths"].items():
        for method, op in operations.items():
            yield method.upper(), path, op


def _cases(api: Any, project: str) -> Iterator[tuple[str, str, str, dict[str, Any], Any]]:
    """(what is tried, method, url, params, json body) for every whole number of every route,
    and each hostile value in its place."""
    spec = api.openapi()
    for method, path, op in _doors(api):
        params = op.get("parameters", [])
        segments = {p["name"]: "1" for p in params if p["in"] == "path"}
        segments |= {name: value for name, value in NAMES.items() if name in segments}
        segments["project"] = project
        body_schema = op.get("requestBody", {}).get("content", {}).get("application/json")
        body = _example(spec, body_schema["schema"]) if body_schema else None
        tried: list[tuple[str, str, Any]] = []  # (where, name or dotted field, kind)
        tried += [("path", p["name"], None) for p in params if p["in"] == "path"]
        tried += [
            ("query", p["name"], None)
            for p in params
            if p["in"] == "query" and _schema(spec, p["schema"]).get("type") == "integer"
        ]
        if body_schema:
            tried += [
                ("body", ".".join(f), many) for f, many, _ in _integers(spec, body_schema["schema"])
            ]
        for where, name, many in tried:
            if where == "path" and name in NAMES:
                continue
            for bad in HOSTILE:
                seg, query, payload = dict(segments), {}, body
                if where == "path":
                    seg[name] = str(bad)
                elif where == "query":
                    query = {name: str(bad)}
                else:
                    payload = _with(body, name.split("."), [bad] if many else bad)
                url = path.format(**{k: quote(v, safe="") for k, v in seg.items()})
                yield f"{method} {path} {where} {name}={bad!r}", method, url, query, payload


def _with(body: Any, field: list[str], value: Any) -> Any:
    out = dict(body)
    out[field[0]] = value if len(field) == 1 else _with(out.get(field[0], {}), field[1:], value)
    return out


def test_every_whole_number_of_every_route_refuses_what_is_no_id_with_a_4xx(client, demo, caplog):
    cases = list(_cases(client.app, demo.name))
    routes = {c[0].split(" ")[1] for c in cases}
    assert len(routes) >= 12  # jobs, cancel, delete, review, activate, bulk, answers, label, ...
    wrong = []
    with caplog.at_level(logging.ERROR):
        for what, method, url, query, body in cases:
            answer = client.request(method, url, params=query, json=body)
            ok = 400 <= answer.status_code < 500 and "error" in answer.json()
            if not ok:
                wrong.append((what, answer.status_code, answer.text[:120]))
    assert wrong == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_the_api_docs_bound_every_whole_number_a_client_sends(client):
    """The OpenAPI schema says what an id is: no integer of any route is unbounded."""
    spec = client.app.openapi()
    unbounded = []
    for method, path, op in _doors(client.app):
        found = [
            (p["name"], _schema(spec, p["schema"]))
            for p in op.get("parameters", [])
            if _schema(spec, p["schema"]).get("type") == "integer"
        ]
        body = op.get("requestBody", {}).get("content", {}).get("application/json")
        if body:
            found += [(".".join(f), s) for f, _, s in _integers(spec, body["schema"])]
        for name, schema in found:
            if not (1 >= schema.get("minimum", -1) >= 0 and schema.get("maximum", 2**63) <= MAX_ID):
                unbounded.append(f"{method} {path} {name}")
    assert unbounded == []


@pytest.mark.parametrize("segment", ["v3", "3", " 3"])
def test_a_version_number_is_read_as_before(client, demo, segment):
    answer = client.post(f"/api/v1/projects/{quote(demo.name)}/versions/{segment}/activate")
    assert answer.status_code == 404 and "3" in answer.json()["error"]  # no version 3: not found


# Issue 73, items 4 and 9: a value of another JSON type than a field's, wherever a body takes it.
WRONG_TYPES: list[Any] = ["x", 7, 1.5, True, False, None, [], ["x"], {}, {"a": 1}]
JSON_TYPE = {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null"}
JSON_TYPE |= {list: "array", dict: "object"}


def _takes(spec: dict[str, Any], schema: dict[str, Any]) -> set[str]:
    """The JSON types a field's schema takes (a whole number is a number too)."""
    if "$ref" in schema:
        return _takes(spec, spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]])
    if "anyOf" in schema:
        return set().union(*(_takes(spec, s) for s in schema["anyOf"]))
    if "enum" in schema or "const" in schema:
        return {JSON_TYPE[type(v)] for v in schema.get("enum", [schema.get("const")])}
    kind = schema.get("type")
    return {"integer", "number"} if kind == "number" else {str(kind)} if kind else set()


def _fields(
    spec: dict[str, Any], schema: dict[str, Any], path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], set[str]]]:
    """(where, the JSON types it takes) of every field of a body, at any depth."""
    for name, prop in _schema(spec, schema).get("properties", {}).items():
        yield (*path, name), _takes(spec, prop)
        if _schema(spec, prop).get("type") == "object":
            yield from _fields(spec, prop, (*path, name))


def test_every_field_of_every_body_refuses_a_value_of_another_type(client, demo, caplog):
    """Before, JSON ``true`` was taken as 1 (``predict {"k": true}`` answered 200) and 1 as
    ``true`` (``label {"create": 1}`` created intents): every field now takes only its own JSON
    type, and says so (422, naming the field and what it takes)."""
    spec = client.app.openapi()
    tried, wrong = 0, []
    with caplog.at_level(logging.ERROR):
        for method, path, op in _doors(client.app):
            body_schema = op.get("requestBody", {}).get("content", {}).get("application/json")
            if not body_schema:
                continue
            body = _example(spec, body_schema["schema"])
            segments = {p["name"]: "1" for p in op.get("parameters", []) if p["in"] == "path"}
            segments |= {n: v for n, v in NAMES.items() if n in segments} | {"project": demo.name}
            url = path.format(**{k: quote(v or "", safe="") for k, v in segments.items()})
            for field, takes in _fields(spec, body_schema["schema"]):
                for bad in WRONG_TYPES:
                    kind = JSON_TYPE[type(bad)]
                    if kind in takes or (kind == "integer" and "number" in takes) or not takes:
                        continue
                    answer = client.request(method, url, json=_with(body, list(field), bad))
                    tried += 1
                    said = answer.json().get("error", "") if answer.status_code < 500 else ""
                    if answer.status_code != 422 or f"{field[-1]}" not in said:
                        wrong.append((method, path, ".".join(field), bad, answer.status_code))
    assert tried >= 200
    assert wrong == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    said = client.post(
        f"/api/v1/projects/{quote(demo.name)}/predict", json={"text": "hi", "k": True}
    )
    assert said.status_code == 422
    assert said.json() == {"error": "k: takes a whole number, not true"}
