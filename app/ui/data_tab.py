"""The Data tab: a table to label from. Text and intents side by side with the model's prediction
and its score, filters (split, intent, predicted intent, gold ≠ predicted, score below x, text),
sort by score, pages of 100; the selected row is edited in the panel beside the table. Intents and
import/export live in the accordions below (:mod:`app.ui.data_manage`)."""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import gradio as gr
import pandas as pd

from app.access import ProjectHandle
from app.access.actions import EDIT, UNDO
from app.services.labelling import data as svc
from app.services.labelling import history
from app.services.labelling import table as table_svc
from app.serving.live import LivePools
from app.serving.state import ServingState
from app.ui.common import CONFIRM_TEST, attempt, bind, confirm_test_box, md_text, ok, problem
from app.ui.data_bulk import build_bulk
from app.ui.data_filters import ALL, read_filters
from app.ui.data_manage import HEADERS, INTENT_COLUMNS, build_manage, table_frame
from app.ui.guard import guarded
from storage.db import Database
from storage.ids import BadId, parse_id

SPLIT_CHOICES = ["train", "test", "unlabelled"]
SCORE_CHOICES = [ALL, "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9"]
SORT_CHOICES = [
    ("file order", "file"),
    ("lowest score first", "score_low"),
    ("highest score first", "score_high"),
]


class TableView(NamedTuple):
    """The outputs of a table refresh, in the order of its outputs list."""

    table: pd.DataFrame
    rows: list[dict[str, Any]]
    caption: str
    page: int
    intent_filter: Any
    predicted_filter: Any
    intents_table: Any
    edit_intents: Any
    add_intents: Any
    rename_from: Any
    merge_sources: Any
    merge_target: Any
    bulk_target: Any


def refresh(
    live: LivePools, p: ProjectHandle | None, q: table_svc.TableQuery, page: Any = 1
) -> TableView:
    """The table page, the row records behind it, the caption, and every intent picker's
    choices (the intents may have changed)."""
    if p is None:
        same = gr.update()
        return TableView(table_frame([]), [], "", 1, same, same, pd.DataFrame(), *[same] * 6)
    result, err = attempt(
        lambda: table_svc.table_page(
            live, p, dataclasses.replace(q, page=parse_id(page or 1, "page number"))
        )
    )
    intents, intents_err = attempt(lambda: svc.intents(live.db, p))
    err = err or intents_err
    names = [i["name"] for i in intents or []]
    rows = result.rows if result else []
    caption = problem(err or "", notify=False) if err or result is None else result.caption()
    pick = gr.update(choices=names)
    return TableView(
        table_frame(rows),
        rows,
        caption,
        result.page if result else 1,
        gr.update(choices=[ALL, "(none)", *names]),
        gr.update(choices=[ALL, *names]),
        pd.DataFrame(intents or [], columns=INTENT_COLUMNS),
        *[pick] * 6,
    )


def first_page(live: LivePools, p: ProjectHandle | None, q: table_svc.TableQuery) -> TableView:
    """The table from its first page (after a filter changed)."""
    return refresh(live, p, q, 1)


def turn_page(
    live: LivePools, step: int, p: ProjectHandle | None, q: table_svc.TableQuery, current: Any
) -> TableView:
    """The page ``step`` pages away from the ``current`` one."""
    try:
        page = max(1, parse_id(current or 1, "page number") + step)
    except BadId:
        page = 1
    return refresh(live, p, q, page)


def on_select(rows: list[dict[str, Any]], evt: gr.SelectData) -> tuple[Any, ...]:
    row_idx = evt.index[0] if isinstance(evt.index, list | tuple) else evt.index
    row = rows[int(row_idx)]
    title = f"#### Utterance #{row['id']}" + (
        f" · predicted **{md_text(row['predicted'])}** ({row['score']:.2f})"
        if row["predicted"]
        else ""
    )
    return (
        row["id"],
        row["version"],
        title,
        row["text"],
        list(row["intents"]),
        row["split"],
        # a test row's change needs a tick: offered only where it applies, and never pre-ticked
        gr.update(value=False, visible=row["split"] == "test"),
    )


def save(
    db: Database,
    p: ProjectHandle,
    uid: float | None,
    version: float | None,
    text: str,
    labels: list[str],
    split: str,
    confirm_test: bool,
    uname: str,
) -> str:
    """Save the edit panel; changing a test row's intents or split needs *I'm changing a test
    label* ticked (:func:`app.services.labelling.data.refuse_unconfirmed_test_change`)."""
    if not uid:
        return problem("Click a row in the table first.")
    try:
        number = parse_id(uid, "utterance id")
        # None: no check of a change meanwhile (as REST without `version`); 0 or "" is no version
        expected = None if version is None else parse_id(version, "version number")
    except BadId as exc:
        return problem(str(exc))

    def run() -> str:
        row = svc.label_utterance(
            db,
            p,
            number,
            labels,
            split=split,
            text=text,
            expected_version=expected,
            confirm_test=bool(confirm_test),
        )
        return f"Saved #{row['id']}: {row['text'][:60]!r} → {', '.join(row['labels']) or 'no intent'} ({row['split']})."

    msg, err = attempt(run)
    if err and err.startswith(f"#{number} is a test utterance"):
        err += f" Tick *{CONFIRM_TEST}* to save it anyway."
    return problem(err) if err else ok(msg or "")


def delete(db: Database, p: ProjectHandle, uid: float | None) -> tuple[str, Any]:
    """Delete the selected utterance; Undo (beside it) brings it back."""
    if not uid:
        return problem("Click a row in the table first."), gr.update()
    gone, err = attempt(lambda: svc.delete_utterance(db, p, parse_id(uid, "utterance id")))
    if err or gone is None:
        return problem(err or ""), gr.update()
    return ok(f"Deleted #{gone.row.id}. Undo brings it back."), None


def add(
    db: Database, p: ProjectHandle, text: str, labels: list[str], split: str
) -> tuple[str, str]:
    row, err = attempt(lambda: svc.add_utterance(db, p, text, labels, split))
    if err:
        return problem(err), text
    assert row is not None
    return ok(f"Added #{row['id']} with {', '.join(row['labels']) or 'no intent'}."), ""


def undo(db: Database, p: ProjectHandle) -> str:
    msg, err = attempt(lambda: history.undo(db, p))
    return problem(err) if err else ok(msg or "")


def build_data_tab(
    serving_state: ServingState, project: gr.Dropdown, user: gr.State, summary: gr.Markdown
) -> dict[str, Any]:
    """Lay out the Data tab and bind its events (``summary``: the line under the project
    picker, which an import into another project rewrites). Returns components other tabs may
    refresh."""
    live, db = serving_state.live, serving_state.db
    with gr.Row(equal_height=True):
        f_split = gr.Dropdown(
            label="Split",
            choices=[ALL, *SPLIT_CHOICES],
            value=ALL,
            scale=1,
            min_width=140,
            elem_id="data-split",
        )
        f_intent = gr.Dropdown(
            label="Intent",
            choices=[ALL],
            value=ALL,
            allow_custom_value=True,
            scale=2,
            elem_id="data-intent",
        )
        f_predicted = gr.Dropdown(
            label="Predicted", choices=[ALL], value=ALL, scale=2, elem_id="data-predicted"
        )
        f_search = gr.Textbox(label="Text contains", scale=2, elem_id="data-search")
        f_below = gr.Dropdown(
            label="Score below",
            choices=SCORE_CHOICES,
            value=ALL,
            scale=1,
            min_width=110,
            elem_id="data-below",
        )
        f_sort = gr.Dropdown(
            label="Sort", choices=SORT_CHOICES, value="file", scale=1, elem_id="data-sort"
        )
        f_disagree = gr.Checkbox(
            label="gold ≠ predicted", scale=1, min_width=120, elem_id="data-disagree"
        )
    with gr.Row(elem_id="data-pager"):
        count = gr.Markdown(elem_id="data-count")
        prev_btn = gr.Button("◀ Previous", size="sm", scale=0, min_width=100)
        page = gr.Number(
            value=1,
            precision=0,
            minimum=1,
            show_label=False,
            scale=0,
            min_width=70,
            container=False,
            elem_id="data-page",
        )
        next_btn = gr.Button("Next ▶", size="sm", scale=0, min_width=80)
    rows = gr.State([])
    with gr.Row():
        with gr.Column(scale=5):
            table = gr.Dataframe(
                value=table_frame([]),
                headers=HEADERS,
                datatype=["number", "str", "markdown", "str", "markdown", "number"],
                interactive=False,
                wrap=True,
                max_height=620,
                column_widths=["6%", "38%", "20%", "10%", "19%", "7%"],
                elem_id="utterance-table",
                show_label=False,
            )
        with gr.Column(scale=2, min_width=320, elem_id="edit-panel"):
            e_title = gr.Markdown("#### Click a row to edit it", elem_id="edit-title")
            # The actions first, under the row's title: at 1280x720 (or with many intents'
            # chips) they stay above the fold after a row click (issue 47, item 4).
            with gr.Row(elem_id="edit-actions"):
                save_btn = gr.Button(
                    "Save", variant="primary", min_width=80, elem_id="save-utterance"
                )
                delete_btn = gr.Button(
                    "Delete", variant="stop", min_width=80, elem_id="delete-utterance"
                )
                undo_btn = gr.Button("Undo", min_width=80, elem_id="undo")
            # no precision: Gradio would round an id of 1.5 sent over the API to 2 (parse_id
            # refuses it)
            e_id = gr.Number(visible=False)
            e_version = gr.Number(visible=False)
            e_text = gr.Textbox(label="Text", lines=1, max_lines=4)
            e_intents = gr.Dropdown(
                label="Intents (one or several; empty = no intent)",
                multiselect=True,
                allow_custom_value=True,
                choices=[],
                elem_id="edit-intents",
            )
            with gr.Row(equal_height=True):
                e_split = gr.Radio(SPLIT_CHOICES, label="Split", value="train", scale=2)
                e_confirm = confirm_test_box("confirm-test-edit", visible=False, scale=1)
            status = gr.Markdown(elem_id="data-status")
            bulk_slot = gr.Column()
            with gr.Accordion("Add an utterance", open=False):
                a_text = gr.Textbox(label="Text", elem_id="add-text")
                a_intents = gr.Dropdown(
                    label="Intents",
                    multiselect=True,
                    allow_custom_value=True,
                    choices=[],
                    elem_id="add-intents",
                )
                a_split = gr.Radio(SPLIT_CHOICES, label="Split", value="train")
                add_btn = gr.Button("Add", variant="primary", elem_id="add-utterance")

    filters = [f_intent, f_split, f_search, f_predicted, f_disagree, f_below, f_sort]
    query = gr.State(table_svc.TableQuery())  # the filters, as one value (read_filters)
    refresh_in = [project, query, page]
    refresh_out: list[Any] = [table, rows, count, page, f_intent, f_predicted]
    quiet: dict[str, Any] = {"show_progress": "hidden", "api_visibility": "private"}
    # A filter change (or another project) sets the query, then shows its first page and counts
    # the bulk label's preview again.
    triggers = (
        f_intent.change,
        f_split.change,
        f_predicted.change,
        f_disagree.change,
        f_sort.change,
        f_search.submit,
        f_below.change,
        project.change,
    )
    set_query = [trigger(read_filters, filters, [query], **quiet) for trigger in triggers]

    manage = build_manage(serving_state, project)
    with bulk_slot:
        bulk = build_bulk(live, project, query, set_query, filters)
    refresh_out += [manage["intents_table"], e_intents, a_intents, *manage["name_choices"]]
    refresh_out += [bulk["target"]]
    for event in set_query:
        event.then(bind(first_page, live), [project, query], refresh_out, **quiet)
    for trigger in triggers:  # the preview on screen is no longer what Label does: at once
        trigger(None, None, None, js=bulk["counting"], **quiet)

    changes: list[Any] = []  # the events that changed the project (the summary follows them)

    def after_change(event: Any) -> None:
        changes.append(
            event.then(bind(refresh, live), refresh_in, refresh_out, show_progress="hidden")
        )

    imported = manage["bind"](after_change, [table, count, summary])
    after_change(bulk["done"])

    def write(fn: Any, outputs: int = 1) -> Any:
        return guarded(EDIT, outputs=outputs)(fn)

    page.submit(bind(refresh, live), refresh_in, refresh_out, **quiet)
    for button, step in ((prev_btn, -1), (next_btn, 1)):
        button.click(bind(turn_page, live, step), refresh_in, refresh_out, **quiet)
    table.select(
        on_select, [rows], [e_id, e_version, e_title, e_text, e_intents, e_split, e_confirm]
    )
    # Each action's message stays in the status line beside its buttons; the refresh that
    # follows writes the row count in the table's own line.
    after_change(
        save_btn.click(
            write(bind(save, db)),
            [project, e_id, e_version, e_text, e_intents, e_split, e_confirm, user],
            [status],
            api_name="save_utterance",
        )
    )
    after_change(
        delete_btn.click(
            write(bind(delete, db), outputs=2), [project, e_id], [status, e_id], **quiet
        )
    )
    after_change(
        add_btn.click(
            write(bind(add, db), outputs=2),
            [project, a_text, a_intents, a_split],
            [status, a_text],
            **quiet,
        )
    )
    after_change(  # the last change undone: the act of the Activity tab, REST and `undo`
        undo_btn.click(guarded(UNDO)(bind(undo, db)), [project], [status], api_name="undo_last")
    )
    return {
        "refresh": (bind(first_page, live), [project, query], refresh_out),
        "status": status,
        "imported": imported,
        "changes": changes,
        "js": bulk["watch"],
    }
