"""Roles as the table in docs/user-guide.md says, checked on the server for every event of the
built app: declared writes refuse a viewer with a message in the status line (never in a file or
dropdown slot), undeclared callbacks run read-only for a viewer, exports need a designer, and
creating a project (also through an import) needs an admin. Every door × every action of the
permissions table: tests/app/ui/test_permissions_table.py."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import gradio as gr
import pytest

from app.access import auth
from app.access.actions import EDIT
from app.services.projects import io as io_svc
from app.services.projects import projects as project_svc
from app.services.projects.io import destination
from app.services.projects.members import add_member
from app.serving.state import ServingState
from app.ui.guard import ROLE, enforce_roles, guarded


class Request:
    """What Gradio passes a callback: the signed-in name."""

    def __init__(self, username: str) -> None:
        self.username = username


@pytest.fixture
def team(serving_state, demo):
    multi = ServingState.open(
        dataclasses.replace(serving_state.settings, multi_user=True), database=serving_state.db
    )
    auth.ensure_admin(multi.db, "admin-password")
    auth.add_user(multi.db, "dana", "designer", "designer-password")
    auth.add_user(multi.db, "vic", "viewer", "viewer-password")
    for name in ("dana", "vic"):  # members of the demo, each with their own role
        add_member(multi.db, demo, name)
    return multi


@pytest.fixture
def events(team):
    """The built multi-user app's callbacks by name (the first of each name)."""
    from app.ui.main import build_app

    app = build_app(team)
    by_name: dict[str, object] = {}
    for block_fn in app.fns.values():
        if block_fn.fn is not None:
            by_name.setdefault(block_fn.name, block_fn.fn)
    return app, by_name


def test_every_event_of_the_app_passes_the_role_check(events):
    app, _ = events
    unchecked = [f.name for f in app.fns.values() if f.fn is not None and not getattr(f.fn, ROLE)]
    assert unchecked == []
    # Gradio hands the signed-in name only to a parameter whose resolved type hint is gr.Request
    deaf = [
        f.name
        for f in app.fns.values()
        if f.fn is not None
        and not f.batch
        and typing.get_type_hints(f.fn).get("request") is not gr.Request
    ]
    assert deaf == []
    # and the page before sign-in carries no project name in its config
    assert app.config is not None and "Demo: Acme support" not in str(app.config)


def test_a_declared_callback_refuses_to_run_until_the_app_enforces_it(team):
    """A tab declares a role without holding the app's context; the built app hands it over.
    A declared callback that never got it fails closed instead of running unchecked."""
    with gr.Blocks() as blocks:
        button, out = gr.Button(), gr.Textbox()
        button.click(guarded(EDIT)(lambda: "ran"), None, out)
    fn = next(iter(blocks.fns.values())).fn
    with pytest.raises(RuntimeError, match="not enforced"):
        fn(request=Request("dana"))
    assert enforce_roles(team, blocks) == 0  # declared: given the context, not wrapped again
    assert fn(request=Request("dana")) == "ran"
    assert "needs the designer role" in fn(request=Request("vic"))


def test_a_callback_nobody_declared_runs_read_only_for_a_viewer(team):
    with gr.Blocks() as blocks:
        button, out = gr.Button(), gr.Textbox()
        status = gr.Markdown(elem_id="sneaky-status")
        button.click(lambda: (project_svc.new_project(team.db, "sneaky"), ""), None, [out, status])
    assert enforce_roles(team, blocks) == 1
    fn = next(iter(blocks.fns.values())).fn
    created, said = fn(request=Request("vic"))  # the refusal is said in the status line
    assert created == gr.skip() and "vic is a viewer: changes need the designer role" in said
    assert "sneaky" not in project_svc.project_names(team.db)
    assert fn(request=Request("dana")) == ("sneaky", "")


def test_a_bug_in_any_callback_is_logged_with_its_traceback_and_shown_in_its_status_line(
    team, demo, caplog
):
    """Issue 58: a callback handed the project's name where the service takes its handle raised
    an AttributeError, and attempt() turned it into an empty list of intents, silently. A bug
    is never an empty answer: it reaches the log with its traceback and the status line."""
    from app.services.labelling import data as data_svc
    from app.ui.common import attempt

    def names(project):  # the bug: a name where the service takes a handle
        return gr.update(choices=attempt(lambda: data_svc.intent_names(team.db, project))[0]), ""

    with gr.Blocks() as blocks:
        button, picker = gr.Button(), gr.Dropdown()
        status = gr.Markdown(elem_id="names-status")
        project = gr.Textbox(demo.name)
        button.click(names, [project], [picker, status])  # read by anyone
        button.click(guarded(EDIT, outputs=2, message=1)(names), [project], [picker, status])
    enforce_roles(team, blocks)
    for fn in (f.fn for f in blocks.fns.values()):
        caplog.clear()
        with caplog.at_level("ERROR", logger="app.ui.guard"):
            choices, said = fn(demo.name, request=Request("dana"))
        assert choices == gr.skip()  # left as it was: never an empty list
        assert "Something went wrong (AttributeError)" in said and "logged" in said
        assert "'str' object has no attribute" not in said  # its kind, not its text
        (record,) = caplog.records
        assert "Unexpected error in UI callback" in record.getMessage()
        assert record.exc_info and record.exc_info[0] is AttributeError  # with its traceback


def test_a_helper_that_turns_errors_into_messages_never_swallows_a_bug():
    from app.ui.common import attempt
    from storage.errors import NotFoundError

    def missing() -> None:
        raise NotFoundError("No project named 'gone'.")

    assert attempt(missing) == (None, "No project named 'gone'.")
    for bug in (AttributeError, TypeError, KeyError, NameError, IndexError, ZeroDivisionError):

        def broken(bug: type[Exception] = bug) -> None:
            raise bug("a bug")

        with pytest.raises(bug):
            attempt(broken)


def test_a_viewer_cannot_export_the_projects_data(events, demo):
    _, fns = events
    status, file = fns["do_export"](demo, "csv", request=Request("vic"))
    assert "vic is a viewer: this needs the designer role" in status
    assert file == gr.update()  # no file handed out
    status, file = fns["do_export"](demo, "csv", request=Request("dana"))
    assert "Exported" in status and Path(file).is_file()


def test_a_refused_bundle_export_says_so_in_the_status_line(events, demo):
    _, fns = events
    bundle, status = fns["export"](demo, False, request=Request("vic"))
    assert bundle == gr.update()  # the file slot is left alone: no postprocess error
    assert "needs the designer role" in status


def test_reads_work_for_a_viewer(events, demo):
    _, fns = events
    summary = fns["show_summary"](demo, request=Request("vic"))
    assert "signed in as **vic** (viewer)" in summary


def test_an_import_that_would_create_a_project_needs_an_admin(team, tmp_path):
    csv = tmp_path / "new.csv"
    csv.write_text("text,label\nwhere is my card,card_arrival\nhow do I pay,pay\n")
    with (
        auth.acting_as(auth.actor(team.db, team.settings.multi_user, "dana")),
        pytest.raises(
            PermissionError,
            match="dana is a designer: creating the project 'Falcon' needs the admin",
        ),
    ):
        io_svc.import_file(team.db, destination(team.db, "Falcon"), csv)
    assert "Falcon" not in project_svc.project_names(team.db)
    with auth.acting_as(auth.actor(team.db, team.settings.multi_user, "admin")):
        assert io_svc.import_file(team.db, destination(team.db, "Falcon"), csv).project == "Falcon"


def test_the_buttons_bound_in_a_loop_reach_their_services(events, team, demo):
    """The member and slot buttons are bound in a loop, where only the typed bind checks that
    each callback gets the piece of the serving state it takes: called as Gradio calls them, they
    change what they say, and a role below theirs changes nothing."""
    from app.services.design import slots as slots_svc
    from app.services.projects import members as members_svc

    _, fns = events
    said = fns["save_slot"](str(demo), "city", "Paris\nLyon", request=Request("dana"))
    assert "Saved slot 'city': 2 value(s)." in said
    assert slots_svc.slot_book(team.db, demo)["city"] == ["Paris", "Lyon"]
    assert "needs" in fns["delete_slot"](str(demo), "city", request=Request("vic"))
    assert "Deleted slot 'city'." in fns["delete_slot"](str(demo), "city", request=Request("dana"))
    assert "city" not in slots_svc.slot_book(team.db, demo)
    assert "vic" in {m.name for m in members_svc.members(team.db, demo)}
    fns["remove_member"](str(demo), "vic", request=Request("admin"))
    assert "vic" not in {m.name for m in members_svc.members(team.db, demo)}
