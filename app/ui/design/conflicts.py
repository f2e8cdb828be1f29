"""The Design tab's Conflicts section: near-duplicates with different intents, likely mislabels
and overlapping intent pairs, ranked in one table; click one to see the utterances behind it and
fix it with one click (relabel, delete, move, merge: each one undoable batch, Undo beside it).
Callbacks only call :mod:`app.services.design.conflicts`."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import gradio as gr
import pandas as pd

from app.access import ProjectHandle
from app.access.actions import FIX_DESIGN
from app.services.design import conflicts as svc
from app.serving.live import LivePools
from app.ui.common import CONFIRM_TEST, attempt, bind, confirm_test_box, md_text, ok, problem
from app.ui.guard import guarded
from storage.db import Database

HELP = (
    "Where the labels disagree with the data, computed out of fold with the frozen base encoder "
    "(each example judged by the other examples only): **near-duplicates** that carry different "
    "intents, **likely mislabelled** examples (cleanlab's confident learning: the rest of the "
    "data confidently says another intent) and **overlapping intents** (often confused with each "
    "other, centres close). Most severe first. Click a row, then fix it with one click; every "
    "fix is one change that **Undo last fix** (or the Activity tab) reverts. A fix that changes "
    f"a **test** row (the *split* column says which) needs *{CONFIRM_TEST}* ticked: "
    "the test split reports the accuracy, and a fix that follows the other examples bends it."
)
ALL = "all"
KIND_CHOICES = [("all kinds", ALL), *((label, key) for key, label in svc.KINDS.items())]
HEADERS = ["kind", "severity", "split", "conflict"]
FIX_BUTTONS = 2
PICK_HINT = "Click a conflict below to see the utterances behind it and fix it."


def _fix_buttons(conflict: dict[str, Any] | None) -> list[Any]:
    fixes = conflict["fixes"] if conflict else []
    return [
        gr.update(value=fixes[i]["label"], visible=True)
        if i < len(fixes)
        else gr.update(visible=False)
        for i in range(FIX_BUTTONS)
    ]


def show(live: LivePools, p: ProjectHandle | None, kind: str | None) -> tuple[Any, ...]:
    """The ranked table, its rows (plain dicts), no selection, the status line, the hint."""
    empty = pd.DataFrame([], columns=HEADERS)
    if p is None:
        return empty, [], None, "Pick a project.", PICK_HINT, *_fix_buttons(None)
    found, err = attempt(lambda: svc.find(live, p, None if kind == ALL else kind))
    if err or found is None:
        return empty, [], None, problem(err or ""), PICK_HINT, *_fix_buttons(None)
    rows = [asdict(c) for c in found]
    table = pd.DataFrame(
        [[svc.KINDS[c.kind], f"{c.severity:.2f}", _splits(c), c.title] for c in found],
        columns=HEADERS,
    )
    counts = ", ".join(
        f"{sum(c.kind == k for c in found)} {label}" for k, label in svc.KINDS.items()
    )
    status = f"{len(found)} conflicts ({counts})." if found else "No conflicts found."
    return table, rows, None, status, PICK_HINT if found else "", *_fix_buttons(None)


def _splits(c: svc.Conflict) -> str:
    """Which splits a conflict's rows are in: ``test``, ``train`` or ``train + test``."""
    if not c.test_ids:
        return "train"
    return "test" if len(c.test_ids) == len(c.ids) else "train + test"


def evidence_markdown(conflict: dict[str, Any]) -> str:
    """The selected conflict and the utterances behind it; user text escaped."""
    lines = [f"**{md_text(conflict['title'])}**", ""]
    lines += [f"- {md_text(line)}" for line in conflict["evidence"]]
    if conflict.get("test_ids"):
        ids = ", ".join(f"#{i}" for i in conflict["test_ids"])
        lines += ["", f"**Test row(s): {ids}.** Tick *{CONFIRM_TEST}* to fix them."]
    return "\n".join(lines)


def pick(rows: list[dict[str, Any]], evt: gr.SelectData) -> tuple[Any, ...]:
    """The clicked conflict: (its index, its evidence, its fix buttons, the test-label
    confirmation unticked: each test row is confirmed on its own)."""
    index = evt.index[0] if isinstance(evt.index, list | tuple) else evt.index
    untick = gr.update(value=False)
    if index is None or int(index) >= len(rows):
        return None, PICK_HINT, *_fix_buttons(None), untick
    conflict = rows[int(index)]
    return int(index), evidence_markdown(conflict), *_fix_buttons(conflict), untick


def fix_conflict(
    db: Database,
    which: int,
    p: ProjectHandle,
    rows: list[dict[str, Any]],
    selected: int | None,
    confirm_test: bool = False,
) -> str:
    """Apply the selected conflict's fix number ``which`` (one that changes a test row only
    with ``confirm_test``)."""
    if selected is None or selected >= len(rows) or which >= len(rows[selected]["fixes"]):
        return problem("Click a conflict in the table first.")
    d = rows[selected]["fixes"][which]
    fix = svc.Fix(
        d["action"], d["label"], tuple(d["ids"]), tuple(d["intents"]), tuple(d["versions"])
    )
    msg, err = attempt(lambda: svc.apply(db, p, fix, confirm_test=bool(confirm_test)))
    return problem(err) if err else ok(f"{msg} (Undo last fix reverts it.)")


def show_after_fix(
    live: LivePools, p: ProjectHandle | None, kind: str | None, said: str
) -> tuple[Any, ...]:
    """The table found again after a fix; after a refused one everything stays as it was (the
    selection too: tick the confirmation and press the fix again)."""
    if (said or "").startswith("⚠"):
        return tuple(gr.update() for _ in range(5 + FIX_BUTTONS))
    return show(live, p, kind)


def undo_fix(db: Database, p: ProjectHandle) -> str:
    msg, err = attempt(lambda: svc.undo(db, p))
    return problem(err) if err else ok(msg or "")


def build_conflicts(live: LivePools, project: gr.Dropdown, user: gr.State) -> dict[str, Any]:
    gr.Markdown("### Conflicts")
    with gr.Accordion("What counts as a conflict", open=False):
        gr.Markdown(HELP, elem_classes=["help"])
    with gr.Row(equal_height=True):
        kind = gr.Dropdown(KIND_CHOICES, value=ALL, label="Show", scale=1, elem_id="conflicts-kind")
        find_btn = gr.Button("Find conflicts", scale=0, min_width=160, elem_id="conflicts-find")
        summary = gr.Markdown(elem_id="conflicts-summary")
    rows = gr.State([])
    selected = gr.State(None)
    # The selection and its fixes above the table: they stay in view when a row is clicked.
    detail = gr.Markdown(PICK_HINT, elem_id="conflicts-detail")
    with gr.Row():
        fix_btns = [
            gr.Button(
                visible=False,
                variant="primary" if i == 0 else "secondary",
                scale=0,
                min_width=340,
                elem_id=f"conflicts-fix-{i + 1}",
            )
            for i in range(FIX_BUTTONS)
        ]
        undo_btn = gr.Button("Undo last fix", scale=0, min_width=150, elem_id="conflicts-undo")
        confirm = confirm_test_box("conflicts-confirm-test", scale=0, min_width=220)
    status = gr.Markdown(elem_id="conflicts-status")
    table = gr.Dataframe(
        headers=HEADERS,
        interactive=False,
        wrap=True,
        elem_id="conflicts-table",
        column_widths=["15%", "8%", "10%", "67%"],
        max_height=420,
    )

    outputs = [table, rows, selected, summary, detail, *fix_btns]
    refresh = (bind(show, live), [project, kind], outputs)
    quiet: dict[str, Any] = {"api_visibility": "private"}
    find_btn.click(*refresh, **quiet)
    kind.change(*refresh, **quiet)
    table.select(pick, [rows], [selected, detail, *fix_btns, confirm], **quiet)
    for i, btn in enumerate(fix_btns):
        btn.click(
            guarded(FIX_DESIGN)(bind(fix_conflict, live.db, i)),
            [project, rows, selected, confirm],
            [status],
            **quiet,
        ).then(bind(show_after_fix, live), [project, kind, status], outputs, **quiet)
    undo_btn.click(guarded(FIX_DESIGN)(bind(undo_fix, live.db)), [project], [status], **quiet).then(
        *refresh, **quiet
    )
    return {"refresh": refresh}
