"""The Gradio app: a project picker above one tab per activity. Each tab is built by its own
``build_<tab>_tab`` function; callbacks only call ``app.services``."""

from __future__ import annotations

from typing import Any

import gradio as gr

import assets
from app.access import ProjectHandle
from app.access.actions import CREATE_PROJECT
from app.services.projects import downloads
from app.services.projects import projects as project_svc
from app.serving.state import ServingState
from app.ui import bulk_preview
from app.ui.activity_tab import build_activity_tab
from app.ui.api import register_api
from app.ui.common import attempt, ok, problem, project_picker
from app.ui.data_tab import build_data_tab
from app.ui.design import build_design_tab
from app.ui.door_types import typed_doors
from app.ui.guard import enforce_roles, guarded
from app.ui.map_tab import build_map_tab
from app.ui.queue_tab import build_queue_tab
from app.ui.stream_guard import add_stream_guard
from app.ui.summary import summary_line
from app.ui.team_tab import build_team_tab
from app.ui.train import build_train_tab
from app.ui.try_tab import build_try_tab

TITLE = "Intent Studio"
SIGN_OUT_JS = (
    "() => { fetch('logout', {method: 'POST', credentials: 'same-origin'})"
    ".finally(() => window.location.reload()); return []; }"
)


def css() -> str:
    return assets.text("style.css")


def build_app(serving_state: ServingState) -> gr.Blocks:
    # With a login the names are loaded after it (below): the page Gradio serves before sign-in
    # carries the app's config, and project names can be confidential.
    names = [] if serving_state.settings.multi_user else project_svc.project_names(serving_state.db)
    # Gradio keeps a copy of every file it hands out (reports, bundles, exports): those older
    # than the downloads' TTL are deleted, checked every hour.
    with gr.Blocks(title=TITLE, delete_cache=(3600, int(downloads.TTL_S))) as demo:
        user = gr.State("local")
        # One compact line (labels for screen readers only): at 1280x720 every tab needs the
        # height for its own work.
        with gr.Row(equal_height=True, elem_id="app-header"):
            gr.Markdown(f"## {TITLE}", scale=1)
            # Any value reaches the front door (app/ui/guard.py), which answers a project the
            # caller may not see as one that does not exist: Gradio's own check of the choices
            # ("Value: x is not in the list of choices: []") refused every event called over
            # the API in its own words, a member's too (issue 64).
            project = gr.Dropdown(
                names,
                value=names[0] if names else None,
                allow_custom_value=True,
                label="Project",
                show_label=False,
                container=False,
                scale=2,
                elem_id="project",
            )
            new_name = gr.Textbox(
                label="New project",
                show_label=False,
                container=False,
                placeholder="New project: name, then Enter",
                scale=2,
            )
            # Signing out is a POST from this page (app.perimeter.http_guard), every session.
            sign_out = gr.Button(
                "Sign out",
                size="sm",
                variant="secondary",
                scale=0,
                min_width=90,
                visible=serving_state.settings.multi_user,
                elem_id="sign-out",
            )
        sign_out.click(None, None, None, js=SIGN_OUT_JS, api_visibility="private")
        summary = gr.Markdown(elem_id="project-summary")
        register_api(
            serving_state
        )  # first, so the public API names are never taken by a UI callback
        with gr.Tabs():
            with gr.Tab("Label", id="label"):
                queue_tab = build_queue_tab(serving_state.live, project, serving_state.training)
            with gr.Tab("Data", id="data") as data_tab_item:
                data_tab = build_data_tab(serving_state, project, user, summary)
            with gr.Tab("Try", id="try"):
                build_try_tab(serving_state.live, project, user)
            with gr.Tab("Train", id="train") as train_tab_item:
                train_tab = build_train_tab(serving_state, project, user)
            with gr.Tab("Map", id="map") as map_tab_item:
                map_tab = build_map_tab(serving_state.maps, project, user)
            with gr.Tab("Design", id="design") as design_tab_item:
                design_tab = build_design_tab(serving_state, project, user)
            with gr.Tab("Team", id="team") as team_tab_item:
                team_tab = build_team_tab(serving_state, project)
            with gr.Tab("Activity", id="activity") as activity_tab:
                activity = build_activity_tab(serving_state.db, project)

        # Nothing here draws Gradio's run timer over a panel (issue 58 item 7): on a busy
        # server these loads queue for seconds, and "processing | 1.0s" covered the Label tab's
        # card and the Train tab; each panel says itself what it is doing.
        quiet: dict[str, Any] = {"api_visibility": "private", "show_progress": "hidden"}
        activity_tab.select(*activity["refresh"], **quiet)
        team_tab_item.select(*team_tab["refresh"], **quiet)

        def show_summary(p: ProjectHandle | None) -> str:
            return summary_line(serving_state.db, p, team=serving_state.settings.multi_user)

        def create(name: str) -> tuple[Any, str, str]:
            created, err = attempt(lambda: project_svc.new_project(serving_state.db, name))
            if err or created is None:
                return gr.update(), problem(err or ""), name
            return (
                project_picker(serving_state.db, created),
                ok(f"Created {created!r}."),
                "",
            )

        project.change(show_summary, [project], [summary], **quiet)
        # The summary line follows every change (its counts never go stale).
        for changed in [*data_tab["changes"], *queue_tab["changes"]]:
            changed.then(show_summary, [project], [summary], **quiet)
        # ... and the model it names: a retrain that ends, a version made active, or a first
        # version that starts serving while its retrain goes on (the Label tab's model line)
        for serving in (train_tab["serving"], queue_tab["model_line"]):
            serving.change(show_summary, [project], [summary], **quiet)
        demo.load(show_summary, [project], [summary], **quiet)
        add_stream_guard(demo)  # before the keys: every answer they ask for comes back
        demo.load(None, None, None, js=queue_tab["js"], api_visibility="private")
        # the Label tab's model line: what serves, and the card and the Map follow a new model
        demo.load(None, None, None, js=queue_tab["model_js"], api_visibility="private")
        demo.load(*queue_tab["model"], api_visibility="private", show_progress="hidden")
        demo.load(None, None, None, js=assets.text("close_on_pick.js"), api_visibility="private")
        # a bulk label's preview is held back the moment what it was counted for changes
        previews_js = bulk_preview.page_js(data_tab["js"], map_tab["watch"])
        demo.load(None, None, None, js=previews_js, api_visibility="private")
        if not serving_state.settings.multi_user:
            # Behind a login the picker has no project until its load below, whose change starts
            # the queue: a second start here (of no project) could land after it and replace
            # a card being answered.
            start_fn, start_in, start_out = queue_tab["start"]
            demo.load(start_fn, start_in, start_out, **quiet)
        refresh_fn, refresh_in, refresh_out = data_tab["refresh"]
        # The table (predictions of a page of rows) is computed when its tab is opened: at page
        # load it would compete for the CPU with the first labels in the queue.
        data_tab_item.select(
            refresh_fn, refresh_in, refresh_out, api_visibility="private", show_progress="hidden"
        )
        train_fn, train_in, train_out = train_tab["refresh"]
        demo.load(train_fn, train_in, train_out, **quiet)
        project.change(train_fn, train_in, train_out, **quiet)
        # opened (the Label tab's "progress ›" included): the job as it is now, followed while
        # it runs (an automatic retrain starts without this page's Retrain click)
        train_tab_item.select(train_fn, train_in, train_out, **quiet)
        # The map is computed when its tab is opened, not on every page load.
        map_fn, map_in, map_out = map_tab["refresh"]
        map_tab_item.select(map_fn, map_in, map_out, api_visibility="private")
        # The Design tab's sections are computed when it is opened (out-of-fold work).
        for design_fn, design_in, design_out in design_tab["refresh"]:
            design_tab_item.select(design_fn, design_in, design_out, api_visibility="private")
        # The map's click and lasso watcher runs from the start: a map already computed when the
        # tab opens is bound as soon as Plotly draws it (no Refresh needed first).
        demo.load(None, None, None, js=map_tab["js"], api_visibility="private")

        # Fresh project names on every page load (the choices were read when the app was built,
        # or not at all behind a login); a value already picked is left alone: a late answer
        # must not switch back a project picked meanwhile.
        demo.load(
            lambda picked: project_picker(serving_state.db, picked, select=False),
            [project],
            [project],
            **quiet,
        ).then(  # the summary again, of the project now picked (the first can run before it)
            show_summary, [project], [summary], **quiet
        )
        new_name.submit(
            guarded(CREATE_PROJECT, outputs=3, message=1)(create),
            [new_name],
            [project, summary, new_name],
            api_visibility="private",
        )
    typed_doors(demo)  # every value of every call checked by type (app.ui.door_types)
    enforce_roles(serving_state, demo)  # last: every event above passes the role check
    return demo
