"""The Data tab: browse, filter, add, edit and label utterances; manage intents; import/export."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import gradio as gr
import pandas as pd

from app.context import AppContext
from app.services import data as svc
from app.services import io as io_svc
from app.ui.common import attempt, bind, ok, problem
from app.ui.guard import guarded

SPLIT_CHOICES = ["train", "test", "unlabelled"]
ALL = "(all)"


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=svc.COLUMNS)


def refresh(ctx: AppContext, proj: str, intent: str, split: str, search: str) -> tuple[Any, ...]:
    if not proj:
        return (
            _frame([]),
            gr.update(),
            [],
            gr.update(),
            gr.update(),
            gr.update(),
            gr.update(),
            gr.update(),
            "",
        )
    rows, err = attempt(
        lambda: svc.table(
            ctx,
            proj,
            intent=None if intent == ALL else intent,
            split=None if split == ALL else split,
            search=search,
        )
    )
    intents, _ = attempt(lambda: svc.intents(ctx, proj))
    names = [i["name"] for i in intents or []]
    frame = _frame(rows or [])
    note = problem(err) if err else f"{len(rows or [])} utterance(s) shown."
    intents_frame = pd.DataFrame(
        intents or [], columns=["id", "name", "description", "n_train", "n_test"]
    )
    return (
        frame,
        gr.update(choices=[ALL, "(none)", *names]),
        intents_frame,
        gr.update(choices=names),
        gr.update(choices=names),
        gr.update(choices=names),
        gr.update(choices=names),
        gr.update(choices=names),
        note,
    )


def on_select(frame: pd.DataFrame, evt: gr.SelectData) -> tuple[Any, ...]:
    row_idx = evt.index[0] if isinstance(evt.index, list | tuple) else evt.index
    row = frame.iloc[int(row_idx)]
    labels = [x for x in str(row["intents"]).split("|") if x]
    return int(row["id"]), int(row["version"]), row["text"], labels, row["split"]


def save(
    ctx: AppContext,
    proj: str,
    uid: float | None,
    version: float | None,
    text: str,
    labels: list[str],
    split: str,
    uname: str,
) -> str:
    if not uid:
        return problem("Click a row in the table first.")

    def run() -> str:
        row = svc.label_utterance(
            ctx,
            proj,
            int(uid),
            labels,
            split=split,
            text=text,
            expected_version=int(version) if version else None,
        )
        return f"Saved #{row['id']}: {row['text'][:60]!r} → {', '.join(row['labels']) or 'no intent'} ({row['split']})."

    msg, err = attempt(run)
    return problem(err) if err else ok(msg or "")


def delete(ctx: AppContext, proj: str, uid: float | None) -> str:
    if not uid:
        return problem("Click a row in the table first.")
    _, err = attempt(lambda: svc.delete_utterance(ctx, proj, int(uid)))
    return problem(err) if err else ok(f"Deleted #{int(uid)}.")


def add(ctx: AppContext, proj: str, text: str, labels: list[str], split: str) -> tuple[str, str]:
    row, err = attempt(lambda: svc.add_utterance(ctx, proj, text, labels, split))
    if err:
        return problem(err), text
    assert row is not None
    return ok(f"Added #{row['id']} with {', '.join(row['labels']) or 'no intent'}."), ""


def undo(ctx: AppContext, proj: str) -> str:
    msg, err = attempt(lambda: svc.undo(ctx, proj))
    return problem(err) if err else ok(msg or "")


def create_intent(ctx: AppContext, proj: str, name: str) -> str:
    msg, err = attempt(lambda: svc.create_intent(ctx, proj, name))
    return problem(err) if err else ok(f"Created intent {msg!r}.")


def rename_intent(ctx: AppContext, proj: str, old: str, new: str) -> str:
    msg, err = attempt(lambda: svc.rename_intent(ctx, proj, old or "", new))
    return problem(err) if err else ok(f"Renamed {old!r} to {msg!r}.")


def delete_intent(ctx: AppContext, proj: str, name: str) -> str:
    n, err = attempt(lambda: svc.delete_intent(ctx, proj, name or ""))
    return (
        problem(err)
        if err
        else ok(f"Deleted intent {name!r}; {n} utterance(s) lost that label (undo restores it).")
    )


def merge(ctx: AppContext, proj: str, sources: list[str], target: str) -> str:
    n, err = attempt(lambda: svc.merge_intents(ctx, proj, sources or [], target or ""))
    return (
        problem(err)
        if err
        else ok(f"Merged {', '.join(sources)} into {target!r}: {n} utterance(s) relabelled.")
    )


def do_import(ctx: AppContext, proj: str, file: Any, target: str, create: bool) -> tuple[str, Any]:
    if file is None:
        return problem("Choose a file to import."), gr.update()
    path = file if isinstance(file, str) else getattr(file, "name", str(file))
    into = target.strip() or proj
    res, err = attempt(lambda: io_svc.import_file(ctx, into, path, create_missing_intents=create))
    if err:
        return problem(err), gr.update()
    assert res is not None
    return ok(res.message()), gr.update(value=res.project)


def do_export(ctx: AppContext, proj: str, fmt: str) -> tuple[str, str | None]:
    out = (
        Path(tempfile.mkdtemp(prefix="intent-studio-export-"))
        / f"{proj.replace('/', '_').replace(' ', '_')}.{fmt}"
    )
    n, err = attempt(lambda: io_svc.export_file(ctx, proj, out))
    return (problem(err), None) if err else (ok(f"Exported {n} utterance(s)."), str(out))


def build_data_tab(ctx: AppContext, project: gr.Dropdown, user: gr.State) -> dict[str, Any]:
    """Lay out the Data tab and bind its events. Returns components other tabs may refresh."""
    with gr.Row():
        f_intent = gr.Dropdown(
            label="Intent", choices=[ALL], value=ALL, allow_custom_value=True, scale=2
        )
        f_split = gr.Dropdown(label="Split", choices=[ALL, *SPLIT_CHOICES], value=ALL, scale=1)
        f_search = gr.Textbox(label="Text contains", scale=3)
        refresh_btn = gr.Button("Refresh", scale=1)
    status = gr.Markdown(elem_id="data-status")
    # The table's own line (how many rows it shows): never written over an action's message.
    count = gr.Markdown(elem_id="data-count")
    table = gr.Dataframe(
        value=_frame([]),
        headers=svc.COLUMNS,
        interactive=False,
        wrap=True,
        max_height=420,
        elem_id="utterance-table",
        label="Utterances (click a row to edit it)",
    )
    with gr.Row():
        with gr.Column(scale=3):
            gr.Markdown("#### Edit the selected utterance")
            e_id = gr.Number(label="id", precision=0, interactive=False)
            e_version = gr.Number(label="version", precision=0, visible=False)
            e_text = gr.Textbox(label="Text")
            e_intents = gr.Dropdown(
                label="Intents (one or several; empty = no intent)",
                multiselect=True,
                allow_custom_value=True,
                choices=[],
            )
            e_split = gr.Radio(SPLIT_CHOICES, label="Split", value="train")
            with gr.Row():
                save_btn = gr.Button("Save", variant="primary", elem_id="save-utterance")
                delete_btn = gr.Button("Delete utterance", variant="stop")
                undo_btn = gr.Button("Undo last label change", elem_id="undo")
        with gr.Column(scale=2):
            gr.Markdown("#### Add an utterance")
            a_text = gr.Textbox(label="Text", elem_id="add-text")
            a_intents = gr.Dropdown(
                label="Intents", multiselect=True, allow_custom_value=True, choices=[]
            )
            a_split = gr.Radio(SPLIT_CHOICES, label="Split", value="train")
            add_btn = gr.Button("Add", variant="primary", elem_id="add-utterance")

    with gr.Accordion("Intents", open=False):
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
            m_sources = gr.Dropdown(label="Merge these intents", multiselect=True, choices=[])
            m_target = gr.Dropdown(label="into", allow_custom_value=True, choices=[])
            m_btn = gr.Button("Merge")

    with gr.Accordion("Import / export", open=False):
        with gr.Row():
            up_file = gr.File(
                label="CSV or JSONL (text,label or text,labels; optional split), Rasa NLU "
                "YAML, or a .zip of intent_name.txt files",
                file_types=[".csv", ".jsonl", ".yml", ".yaml", ".zip"],
                elem_id="import-file",
            )
            with gr.Column():
                up_target = gr.Textbox(
                    label="Into project (empty = the current one; a new name creates it)"
                )
                up_create = gr.Checkbox(
                    label="Create intents that are not in the project yet", value=True
                )
                up_btn = gr.Button("Import", variant="primary", elem_id="import")
        with gr.Row():
            ex_format = gr.Radio(
                [
                    ("CSV", "csv"),
                    ("JSONL", "jsonl"),
                    ("Rasa YAML", "yml"),
                    ("intent .txt files (zip)", "zip"),
                ],
                value="csv",
                label="Export format",
            )
            ex_btn = gr.Button("Export")
            ex_file = gr.File(label="Download", interactive=False)

    # --- callbacks -----------------------------------------------------------------------------

    refresh_outputs = [
        table,
        f_intent,
        intents_table,
        e_intents,
        a_intents,
        i_old,
        m_sources,
        m_target,
        count,
    ]
    filters = [project, f_intent, f_split, f_search]

    def write(fn: Any, outputs: int = 1) -> Any:
        return guarded(ctx, "designer", outputs=outputs)(fn)

    def then_refresh(ev: Any) -> None:
        ev.then(bind(refresh, ctx), filters, refresh_outputs, show_progress="hidden")

    for trigger in (
        refresh_btn.click,
        f_intent.change,
        f_split.change,
        f_search.submit,
        project.change,
    ):
        trigger(bind(refresh, ctx), filters, refresh_outputs, show_progress="hidden")
    table.select(on_select, [table], [e_id, e_version, e_text, e_intents, e_split])
    # Each action's message stays in the status line: the refresh that follows writes the row
    # count in the table's own line.
    then_refresh(
        save_btn.click(
            write(bind(save, ctx)),
            [project, e_id, e_version, e_text, e_intents, e_split, user],
            [status],
            api_name="save_utterance",
        )
    )
    then_refresh(
        delete_btn.click(
            write(bind(delete, ctx)), [project, e_id], [status], api_visibility="private"
        )
    )
    then_refresh(
        add_btn.click(
            write(bind(add, ctx), outputs=2),
            [project, a_text, a_intents, a_split],
            [status, a_text],
            api_visibility="private",
        )
    )
    then_refresh(undo_btn.click(write(bind(undo, ctx)), [project], [status], api_name="undo"))
    then_refresh(
        i_create.click(
            write(bind(create_intent, ctx)),
            [project, i_name],
            [status],
            api_visibility="private",
        )
    )
    then_refresh(
        i_rename.click(
            write(bind(rename_intent, ctx)),
            [project, i_old, i_new],
            [status],
            api_visibility="private",
        )
    )
    then_refresh(
        i_delete.click(
            write(bind(delete_intent, ctx)), [project, i_old], [status], api_visibility="private"
        )
    )
    then_refresh(
        m_btn.click(
            write(bind(merge, ctx)),
            [project, m_sources, m_target],
            [status],
            api_visibility="private",
        )
    )
    imported = up_btn.click(
        write(bind(do_import, ctx), outputs=2),
        [project, up_file, up_target, up_create],
        [status, project],
        api_visibility="private",
    )
    then_refresh(imported)
    ex_btn.click(
        bind(do_export, ctx), [project, ex_format], [status, ex_file], api_visibility="private"
    )
    return {
        "refresh": (bind(refresh, ctx), filters, refresh_outputs),
        "status": status,
        "imported": imported,
    }
