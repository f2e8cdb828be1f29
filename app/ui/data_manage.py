"""The Data tab's accordions: the project's intents (create, rename, delete, merge) and import /
export. Each action's message stays in its own line beside its button (and in a toast)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gradio as gr
import pandas as pd

from app.access import ProjectHandle, open_project
from app.access.actions import EDIT_INTENTS, EXPORT, IMPORT, Action
from app.services.labelling import data as svc
from app.services.projects import export as export_svc
from app.services.projects import io as io_svc
from app.serving.state import ServingState
from app.ui.common import GONE, attempt, bind, breakable, md_text, ok, problem, project_picker
from app.ui.data_slots import build_slots
from app.ui.guard import guarded
from app.ui.settings_section import build_settings
from app.ui.summary import summary_line
from storage.db import Database

INTENT_COLUMNS = ["id", "name", "description", "n_train", "n_test"]
# The Data tab's table (app.ui.data_tab), which an import into another project empties.
HEADERS = ["id", "text", "intents", "split", "predicted", "score"]


def chips(names: list[str]) -> str:
    """Intents as chips (``code`` elements, which the table's CSS draws as chips), each breaking
    only after an underscore (:func:`app.ui.common.breakable`)."""
    return " ".join(f"<code>{breakable(n)}</code>" for n in names)


def table_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The Data tab's rows as its table shows them: intents as chips, names breaking only after
    an underscore."""
    shown = [
        {
            **r,
            "intents": chips(r["intents"]),
            "predicted": breakable(r["predicted"] or ""),
            "score": "" if r["score"] is None else r["score"],
        }
        for r in rows
    ]
    return pd.DataFrame(shown, columns=HEADERS)


def create_intent(db: Database, p: ProjectHandle, name: str) -> str:
    msg, err = attempt(lambda: svc.create_intent(db, p, name))
    return problem(err) if err else ok(f"Created intent {msg!r}.")


def rename_intent(db: Database, p: ProjectHandle, old: str, new: str) -> str:
    msg, err = attempt(lambda: svc.rename_intent(db, p, old or "", new))
    return problem(err) if err else ok(f"Renamed {old!r} to {msg!r}.")


def describe_intent(db: Database, p: ProjectHandle, name: str, description: str) -> str:
    text, err = attempt(lambda: svc.describe_intent(db, p, name or "", description or ""))
    if err:
        return problem(err)
    return ok(f"Described {name!r}: {text!r}." if text else f"Cleared the description of {name!r}.")


def intent_description(db: Database, p: ProjectHandle | None, name: str) -> str:
    """The chosen intent's description, to edit."""
    if p is None or not name:
        return ""
    found = [i["description"] for i in svc.intents(db, p) if i["name"] == name]
    return found[0] if found else ""


def delete_intent(db: Database, p: ProjectHandle, name: str) -> str:
    n, err = attempt(lambda: svc.delete_intent(db, p, name or ""))
    return (
        problem(err)
        if err
        else ok(f"Deleted intent {name!r}; {n} utterance(s) lost that label (undo restores it).")
    )


def merge(db: Database, p: ProjectHandle, sources: list[str], target: str) -> str:
    n, err = attempt(lambda: svc.merge_intents(db, p, sources or [], target or ""))
    return (
        problem(err)
        if err
        else ok(f"Merged {', '.join(sources)} into {target!r}: {n} utterance(s) relabelled.")
    )


def do_import(
    serving_state: ServingState,
    p: ProjectHandle | None,
    file: Any,
    target: str,
    create: bool,
    language: str = "",
) -> tuple[Any, ...]:
    """Import a file into the project named (empty: the current one); ``language``: for a
    platform agent, the language (Lex: locale) to read instead of its default.

    Returns the message, the picker (a new name is a new choice) and, with the message, the
    table, its line and the summary line: into another project, the table is emptied and says
    that project is loading (its first page follows) and the summary names it, so nothing shows
    the last project's rows under the new name while the page catches up (issue 47, item 7)."""
    same = gr.update()
    if file is None:
        return problem("Choose a file to import."), same, same, same, same
    path = file if isinstance(file, str) else getattr(file, "name", str(file))
    if not Path(path).exists():
        return problem(GONE), same, same, same, same
    into, err = attempt(lambda: _import_target(serving_state.db, p, target))
    if err or into is None:
        return problem(err or ""), same, same, same, same
    try:
        res, err = attempt(
            lambda: io_svc.import_file(
                serving_state.db,
                into,
                path,
                create_missing_intents=create,
                language=language.strip() or None,
            )
        )
    finally:
        serving_state.uploads.used_up(
            path
        )  # the import ended: its upload goes (upload it again to retry)
    if err:
        return problem(err), same, same, same, same
    assert res is not None
    picker = project_picker(serving_state.db, res.project)
    if p is not None and res.project == p.name:
        return ok(res.message()), picker, same, same, same
    there = open_project(serving_state.db, res.project)
    empty = pd.DataFrame(columns=HEADERS)
    loading = f"Loading {md_text(res.project)}…"
    return (
        ok(res.message()),
        picker,
        empty,
        loading,
        summary_line(serving_state.db, there, team=serving_state.settings.multi_user),
    )


def _import_target(db: Database, p: ProjectHandle | None, target: str) -> ProjectHandle | str:
    """Where an import goes: the current project, another one the user may change (named), or
    the name of a new project (created by the import; an admin's to do)."""
    name = (target or "").strip()
    if not name:
        if p is None:
            raise ValueError("Name the project to import into (a new name creates it).")
        p.require_writable(IMPORT)
        return p
    return p if p is not None and name == p.name else io_svc.destination(db, name)


# The agent formats the Export radio offers (its value is the format's name).
AGENT_CHOICES = [
    ("Dialogflow ES agent (zip)", "dialogflow-es"),
    ("Dialogflow CX agent (zip)", "dialogflow-cx"),
    ("Dialogflow CX agent (JSON)", "dialogflow-cx-json"),
    ("Amazon Lex V2 bot (zip)", "lex-v2"),
    ("Watson Assistant skill (JSON)", "watson"),
    ("LUIS app (JSON)", "luis"),
    ("CLU project (JSON)", "clu"),
]


def do_export(serving_state: ServingState, p: ProjectHandle, fmt: str) -> tuple[str, str | None]:
    """Export in the format chosen (see :func:`app.services.projects.export.export_download`)."""
    res, err = attempt(lambda: export_svc.export_download(serving_state, p, fmt))
    if err:
        return problem(err), None
    assert res is not None
    out, message = res
    return ok(message), str(out)


def build_manage(serving_state: ServingState, project: gr.Dropdown) -> dict[str, Any]:
    """Lay out the intents, slots, import/export and project settings accordions. Returns their components and
    ``bind(after_change)``, which binds their events once the Data tab knows how to refresh:
    ``after_change(event)`` chains the refresh after an event that changed the project."""
    with gr.Accordion("Intents", open=False, elem_id="intents-accordion"):
        intents_table = gr.Dataframe(
            headers=["id", "name", "description", "n_train", "n_test"], interactive=False
        )
        with gr.Row():
            i_name = gr.Textbox(label="New intent name")
            i_create = gr.Button("Create")
        with gr.Row():
            i_old = gr.Dropdown(label="Intent", choices=[])
            i_new = gr.Textbox(label="New name")
            i_rename = gr.Button("Rename")
            i_delete = gr.Button("Delete intent", variant="stop")
        with gr.Row():
            i_desc = gr.Textbox(
                label="Description of the chosen intent (a sentence: with anchors on, it "
                "predicts before the intent has examples)",
                scale=4,
            )
            i_describe = gr.Button("Save description")
        intent_status = gr.Markdown(elem_id="intent-status")
        with gr.Row():
            m_sources = gr.Dropdown(
                label="Merge these intents", multiselect=True, choices=[], elem_id="merge-sources"
            )
            m_target = gr.Dropdown(
                label="into", allow_custom_value=True, choices=[], elem_id="merge-into"
            )
            m_btn = gr.Button("Merge", elem_id="merge-intents")

    build_slots(serving_state.db, project)

    with gr.Accordion("Import / export", open=False):
        with gr.Row():
            up_file = gr.File(
                label="CSV or JSONL (text,label or text,labels; optional split), Rasa NLU "
                "YAML, a slot book YAML, a .zip of intent_name.txt files, or an agent: "
                "Dialogflow ES/CX or Lex V2 (.zip), Watson, LUIS, CLU or Dialogflow CX (.json)",
                file_types=[".csv", ".jsonl", ".yml", ".yaml", ".zip", ".json"],
                elem_id="import-file",
            )
            with gr.Column():
                up_target = gr.Textbox(
                    label="Into project (empty = the current one; a new name creates it)"
                )
                up_create = gr.Checkbox(
                    label="Create intents that are not in the project yet", value=True
                )
                up_language = gr.Textbox(
                    label="Agent language (empty = the agent's default; Lex: a locale such as "
                    "de_DE)",
                    max_lines=1,
                )
                up_btn = gr.Button("Import", variant="primary", elem_id="import")
                up_status = gr.Markdown(elem_id="import-status")
        with gr.Row():
            ex_format = gr.Radio(
                [
                    ("CSV", "csv"),
                    ("JSONL", "jsonl"),
                    ("Rasa YAML", "yml"),
                    ("intent .txt files (zip)", "zip"),
                    ("slot book + templates (YAML)", "slots.yml"),
                    *AGENT_CHOICES,
                ],
                value="csv",
                label="Export format (an agent format writes into the agent the project was "
                "imported from, when it is that format)",
            )
        with gr.Row():  # the twelve formats get the whole width above, the action below
            ex_btn = gr.Button("Export")
            ex_status = gr.Markdown()
            ex_file = gr.File(label="Download", interactive=False)

    bind_settings = build_settings(serving_state.live, project)

    def bind_events(after_change: Any, shown: list[Any]) -> Any:
        """Bind the accordions' events; ``shown``: the table, its line and the summary line
        (an import into another project rewrites them at once)."""

        def write(fn: Any, outputs: int = 1, action: Action = EDIT_INTENTS) -> Any:
            return guarded(action, outputs=outputs)(fn)

        quiet: dict[str, Any] = {"api_visibility": "private"}
        after_change(
            i_create.click(
                write(bind(create_intent, serving_state.db)),
                [project, i_name],
                [intent_status],
                **quiet,
            )
        )
        after_change(
            i_rename.click(
                write(bind(rename_intent, serving_state.db)),
                [project, i_old, i_new],
                [intent_status],
                **quiet,
            )
        )
        i_old.change(
            bind(intent_description, serving_state.db), [project, i_old], [i_desc], **quiet
        )
        after_change(
            i_describe.click(
                write(bind(describe_intent, serving_state.db)),
                [project, i_old, i_desc],
                [intent_status],
                **quiet,
            )
        )
        after_change(
            i_delete.click(
                write(bind(delete_intent, serving_state.db)),
                [project, i_old],
                [intent_status],
                **quiet,
            )
        )
        after_change(
            m_btn.click(
                write(bind(merge, serving_state.db)),
                [project, m_sources, m_target],
                [intent_status],
                **quiet,
            )
        )
        imported = up_btn.click(
            write(bind(do_import, serving_state), outputs=5, action=IMPORT),
            [project, up_file, up_target, up_create, up_language],
            [up_status, project, *shown],
            **quiet,
        )
        after_change(imported)
        bind_settings(after_change)
        ex_btn.click(  # the project's data leaves the app: designers and admins only
            write(bind(do_export, serving_state), outputs=2, action=EXPORT),
            [project, ex_format],
            [ex_status, ex_file],
            **quiet,
        )
        return imported

    return {
        "bind": bind_events,
        "intents_table": intents_table,
        "name_choices": [i_old, m_sources, m_target],
    }
