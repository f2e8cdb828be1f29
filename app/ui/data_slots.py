"""The Data tab's *Slots and templates* accordion (TaDSE): the project's slot book (values per
slot) and an intent's templates (``fly me to {city}``), edited as one item per line. Pick a slot
or an intent to load it, edit, save; every refusal says why and changes nothing. They are
project data that imports and exports carry (Rasa YAML, slot book files); retraining does not
use them. The callbacks are plain functions over the services (:mod:`app.services.design.slots`)."""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from app.access import ProjectHandle
from app.access.actions import EDIT_SLOTS
from app.services.design import slots as svc
from app.services.labelling import data as data_svc
from app.ui.common import attempt, bind, ok, problem
from app.ui.guard import guarded
from storage.db import Database

BOOK_COLUMNS = ["slot", "values", "n"]
SHOW_VALUES = 8


def book_frame(book: dict[str, list[str]]) -> pd.DataFrame:
    """One row per slot: its first values and how many it has."""
    rows = [
        [slot, ", ".join(v[:SHOW_VALUES]) + (" …" if len(v) > SHOW_VALUES else ""), len(v)]
        for slot, v in book.items()
    ]
    return pd.DataFrame(rows, columns=BOOK_COLUMNS)


def load(db: Database, p: ProjectHandle | None) -> tuple[Any, Any, Any]:
    """The slot table and the slot and intent pickers' choices."""
    if p is None:
        return book_frame({}), gr.update(choices=[]), gr.update(choices=[])
    # a refusal (the project deleted meanwhile) is the front door's to show (app/ui/guard.py)
    book, names = svc.slot_book(db, p), data_svc.intent_names(db, p)
    return book_frame(book), gr.update(choices=list(book)), gr.update(choices=names)


def pick_slot(db: Database, p: ProjectHandle, slot: str) -> str:
    """The slot's values, one per line (empty for a new slot)."""
    return "\n".join(svc.slot_book(db, p).get(slot or "", []))


def pick_intent(db: Database, p: ProjectHandle, intent: str) -> str:
    """The intent's templates, one per line."""
    if not intent:
        return ""
    return "\n".join(svc.templates(db, p, intent).get(intent, []))


def save_slot(db: Database, p: ProjectHandle, slot: str, values: str) -> str:
    n, err = attempt(lambda: svc.save_slot(db, p, slot or "", values or ""))
    return problem(err) if err else ok(f"Saved slot {slot.strip()!r}: {n} value(s).")


def delete_slot(db: Database, p: ProjectHandle, slot: str) -> str:
    _, err = attempt(lambda: svc.delete_slot(db, p, slot or ""))
    return problem(err) if err else ok(f"Deleted slot {slot!r}.")


def save_templates(db: Database, p: ProjectHandle, intent: str, texts: str) -> str:
    if not intent:
        return problem("Pick an intent first.")
    n, err = attempt(lambda: svc.save_templates(db, p, intent, texts or ""))
    return problem(err) if err else ok(f"Saved {n} template(s) of {intent!r}.")


def build_slots(db: Database, project: gr.Dropdown) -> None:
    """Lay out the accordion and bind its events."""
    with gr.Accordion("Slots and templates", open=False) as section:
        gr.Markdown(
            "Values per slot and templates per intent (`fly me to {city}`), kept with the "
            "project (retraining does not use them). A Rasa YAML import fills them from entity "
            "annotations and lookup tables, and a Rasa export writes those back; the *slot book "
            "+ templates* export writes both as YAML, and importing that file adds them."
        )
        table = gr.Dataframe(headers=BOOK_COLUMNS, interactive=False, max_height=220)
        with gr.Row():
            slot = gr.Dropdown(label="Slot (pick, or type a new name)", allow_custom_value=True)
            values = gr.Textbox(label="Values, one per line", lines=4, max_lines=12)
            with gr.Column(min_width=120):
                save_btn = gr.Button("Save slot")
                delete_btn = gr.Button("Delete slot", variant="stop")
        with gr.Row():
            intent = gr.Dropdown(label="Intent whose templates to edit", choices=[])
            texts = gr.Textbox(
                label="Templates, one per line ({slot} where a value goes)", lines=4, max_lines=12
            )
            tmpl_btn = gr.Button("Save templates", min_width=120)
        status = gr.Markdown(elem_id="slot-status")

    def write(fn: Any) -> Any:
        return guarded(EDIT_SLOTS)(fn)

    quiet: dict[str, Any] = {"show_progress": "hidden", "api_visibility": "private"}
    reload = (bind(load, db), [project], [table, slot, intent])
    project.change(*reload, **quiet)
    section.expand(*reload, **quiet)  # the project picked at start fires no change
    intent.focus(*reload, **quiet)  # intents made elsewhere meanwhile
    slot.input(bind(pick_slot, db), [project, slot], [values], **quiet)
    intent.input(bind(pick_intent, db), [project, intent], [texts], **quiet)
    for button, fn, inputs in (
        (save_btn, save_slot, [project, slot, values]),
        (delete_btn, delete_slot, [project, slot]),
        (tmpl_btn, save_templates, [project, intent, texts]),
    ):
        button.click(write(bind(fn, db)), inputs, [status], **quiet).then(*reload, **quiet)
