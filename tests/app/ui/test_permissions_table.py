"""One act, one rule, at every door (issue 64 item 2; issue 67 item 4), generated from the
permissions table (:data:`app.access.actions.ACTIONS`) and the app's own registries of doors:
the built app's events (the page's and the Gradio API's endpoints), the REST app's routes, the
CLI's parser. No list of doors is kept here.

- Every door of every kind names exactly one action of the table.
- Every action × every kind of door: the doors that ask it are the ones the table of roles in
  docs/user-guide.md puts in its row (a REST export asking ``read`` where the UI's asks
  ``export`` fails here: the hand-kept list of 12 UI/REST twins it replaces missed it).
- Every action × every door that asks it, called by a user one role below: refused with the
  table's words ("needs the designer role"), before anything runs. A door that skips the table
  fails here.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import re
from pathlib import Path
from typing import Any

import gradio as gr
import pytest
from fastapi.testclient import TestClient

from app.access import auth
from app.access.actions import ACTIONS, READ, UPLOADS, UnknownAction
from app.access.policy import RANK
from app.services.projects.members import add_member
from app.serving.state import ServingState
from app.ui.guard import ACTION, ROLE, guarded, is_endpoint
from storage.users import ROLES

pytestmark = pytest.mark.fast  # make check runs it (issue 76 item 4)

ROOT = Path(__file__).resolve().parents[3]
KINDS = ("events", "REST", "CLI")  # the table's columns of doors
BELOW = {"designer": "vic", "admin": "dana"}  # a user one role below each role


class Request:
    """What Gradio passes a callback: the signed-in name."""

    def __init__(self, username: str) -> None:
        self.username = username


@pytest.fixture(scope="module")
def doors(tmp_path_factory):
    """The multi-user app on the demo: its events (built), its REST app (with a token for dana, a
    designer, and vic, a viewer, both members of the demo), its serving state."""
    from app.api import create_api
    from app.config import load_settings
    from app.services.projects.projects import ensure_demo_project
    from app.ui.main import build_app

    settings = load_settings(tmp_path_factory.mktemp("doors") / "data")
    serving_state = ServingState.open(dataclasses.replace(settings, multi_user=True))
    demo = ensure_demo_project(serving_state.db)
    auth.ensure_admin(serving_state.db, "admin-password")
    auth.add_user(serving_state.db, "dana", "designer", "designer-password")
    auth.add_user(serving_state.db, "vic", "viewer", "viewer-password")
    with auth.acting_as(auth.LOCAL):
        from app.access import open_project

        for name in ("dana", "vic"):
            add_member(serving_state.db, open_project(serving_state.db, demo), name)
    tokens = {name: auth.issue_token(serving_state.db, name) for name in ("dana", "vic")}
    with TestClient(create_api(serving_state)) as client:
        yield {
            "app": build_app(serving_state),
            "rest": client,
            "tokens": tokens,
            "serving_state": serving_state,
            "demo": demo,
        }
    serving_state.close()


def _rest_routes(api: Any) -> list[Any]:
    """Every route of the REST app's schema (its included routers' routes; checked: none is left
    out). What the schema leaves out is no route of the API: the docs page, the fallback that
    answers an unknown path 404."""
    out = []
    for route in api.routes:
        out += getattr(getattr(route, "original_router", None), "routes", [route])
    documented = {(m.upper(), p) for p, ops in api.openapi()["paths"].items() for m in ops}
    out = [r for r in out if getattr(r, "include_in_schema", False)]
    served = {(m, r.path) for r in out for m in getattr(r, "methods", None) or []}
    assert documented == served
    return out


def app_doors(doors: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """Kind -> door -> its action's name, from the app's own registries."""
    from app.api.gate import OPEN
    from app.api.security import declared_actions
    from app.cli import build_parser

    events = {f.api_name or f.name: getattr(f.fn, ACTION) for f in _fns(doors)}
    rest = declared_actions(_rest_routes(doors["rest"].app))
    for door in OPEN:  # health and readiness, the load balancer's: no token, user or action
        assert rest.pop(f"GET {door}") == []
    rest_one = {door: found[0] if len(found) == 1 else found for door, found in rest.items()}
    cli = {
        cmd: getattr(getattr(fn, "action", None), "name", None)
        for cmd, fn in _commands(build_parser())
    }
    return {"events": events, "REST": rest_one, "CLI": cli}


def _fns(doors: dict[str, Any]) -> list[Any]:
    return [f for f in doors["app"].fns.values() if f.fn is not None]


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, Any]]:
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out += _commands(sub, (*path, name))
    if parser.get_default("func") is not None:
        out.append((" ".join(path), parser.get_default("func")))
    return out


def documented() -> dict[str, dict[str, Any]]:
    """The table of roles of docs/user-guide.md: action -> its role and its doors of each kind."""
    page = (ROOT / "docs" / "user-guide.md").read_text(encoding="utf-8")
    table = page.split("| action | events | REST | CLI | role |", 1)[1].split("\n\n", 1)[0]
    rows: dict[str, dict[str, Any]] = {}
    for line in table.splitlines()[2:]:
        _, what, events, rest, cli, role, _ = line.split("|")
        name = re.match(r"\s*`([a-z_]+)`:", what)
        assert name, line
        full = [
            d.replace("…", "/api/v1/projects/{project}", 1)
            for d in re.findall(r"`([A-Z]+ [^`]+)`", rest)
        ]
        rows[name[1]] = {
            "role": role.strip(),
            "events": set(re.findall(r"`([a-z_0-9]+)`", events)),
            "REST": set(full),
            "CLI": set(re.findall(r"`([a-z ]+)`", cli)),
        }
    return rows


def test_the_tables_roles_are_storages_least_first():
    """The table writes the roles out (importing storage would load SQLAlchemy into
    `intent-studio --help`): they are the ones a user may have, in the same order."""
    from app.access import actions

    assert actions.ROLES == ROLES
    assert {a.role for a in ACTIONS.values()} <= set(ROLES)


def test_every_door_of_the_app_names_exactly_one_action_of_the_table(doors):
    found = app_doors(doors)
    for f in _fns(doors):  # every event, the API's endpoints included; undeclared: read
        action = getattr(f.fn, ACTION)
        assert action in ACTIONS and getattr(f.fn, ROLE) == ACTIONS[action].role, f.name
    assert [d for d, a in found["REST"].items() if a not in ACTIONS] == []  # exactly one
    assert len(found["REST"]) >= 26
    assert [c for c, a in found["CLI"].items() if a not in ACTIONS] == []
    assert len(found["CLI"]) >= 20
    # every project a command opens names its action: constants of the table
    for path in sorted((ROOT / "app" / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "project":
                given = node.args[2] if len(node.args) > 2 else None
                names = (
                    {n.id for n in ast.walk(given) if isinstance(n, ast.Name)} if given else set()
                )
                constants = {n for n in names if n.isupper()}
                assert constants and {n.lower() for n in constants} <= set(ACTIONS), (
                    path,
                    node.lineno,
                )
    asked = {a for kind in KINDS for a in found[kind].values()}  # and every action has a door
    assert set(ACTIONS) <= asked


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_each_action_is_asked_by_the_doors_its_row_of_the_table_of_roles_names(doors, action):
    """Every action × every kind of door: the doors that ask it are those of its row."""
    table = documented()
    assert set(table) == set(ACTIONS)  # a row per action
    row, found = table[action], app_doors(doors)
    assert row["role"] == ACTIONS[action].role
    for kind in KINDS:
        asking = {d for d, a in found[kind].items() if a == action}
        listed = row[kind]
        assert {d for d in listed if found[kind].get(d) != action} == set(), (kind, listed)
        if kind == "events":
            # a repeat of one callback (Gradio numbers it: answer_with_1) is its first's door;
            # a read event may be left out, not a Gradio API endpoint
            endpoints = {f.api_name for f in _fns(doors) if is_endpoint(f)}
            asking = {
                d
                for d in asking
                if d not in listed
                and re.sub(r"_\d+$", "", d) not in listed
                and (action != READ.name or d in endpoints)
            }
            assert asking == set(), (kind, asking)
        else:
            assert asking == listed, (kind, asking ^ listed)


def _said(answer: Any) -> str:
    return " ".join(str(a) for a in answer) if isinstance(answer, tuple) else str(answer)


@pytest.mark.parametrize("action", sorted(a for a in ACTIONS if ACTIONS[a].role != ROLES[0]))
def test_each_door_of_an_action_refuses_a_role_below_it_in_the_tables_words(doors, action):
    """Every action above a viewer's × every event and REST route that asks it, called by a
    user one role below: refused, saying the role the table gives it. (The CLI acts as the
    server's operator, the local admin: each command asks the table before it runs.)"""
    role = ACTIONS[action].role
    who = BELOW[role]
    words = f"needs the {role} role"
    found = app_doors(doors)
    for f in _fns(doors):
        if getattr(f.fn, ACTION) != action:
            continue
        try:
            said = _said(f.fn(*[None] * len(f.inputs), request=Request(who)))
        except gr.Error as refusal:
            said = str(refusal.message)
        assert words in said, (f.api_name or f.name, said[:200])
    client, token = doors["rest"], doors["tokens"][who]
    for door in [d for d, a in found["REST"].items() if a == action]:
        method, path = door.split(" ", 1)
        url = path.format(
            project=doors["demo"], utterance_id=1, job_id=1, version="1", intent="x", user="vic"
        )
        answer = client.request(method, url, headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 403 and words in answer.json()["error"], (door, answer.text)
    if ACTIONS[action] in UPLOADS:  # the upload gate asks the table too
        from app.web import upload_gate

        refusal = upload_gate(doors["serving_state"]).kwargs["refusal"]
        least = min((a.role for a in UPLOADS), key=lambda r: RANK[r])
        below = {"designer": "vic", "admin": "dana"}[least]
        assert f"needs the {least} role" in str(refusal(below))


def test_anything_but_an_action_of_the_table_is_refused_at_every_door(doors):
    """Actions are the table's constants: a door given a name, or a made-up action, refuses
    when it is declared (a misspelt constant fails at import)."""
    from app.access.actions import Action, need
    from app.api.security import project_for, role
    from app.cli.common import acts
    from app.cli.common import project as cli_project

    made_up = Action("frobnicate", "viewer", "frobnicating")
    for given in ("frobnicate", "train", made_up):
        for declare in (guarded, project_for, role, acts, need):
            with pytest.raises(UnknownAction, match="No action"):
                declare(given)
        with pytest.raises(UnknownAction):
            cli_project(doors["serving_state"], doors["demo"], given)
    with pytest.raises(
        UnknownAction, match=r"name it by its constant \(app.access.actions.TRAIN\)"
    ):
        guarded("train")
