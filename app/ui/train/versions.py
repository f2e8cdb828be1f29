"""Train tab, Versions section: the history of model versions, make one active (roll back or
forward), and compare two versions' per-intent F1."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd

from app.access import ProjectHandle
from app.access.actions import TRAIN
from app.services.models import versions as version_svc
from app.serving.factories import FactoryBuilder
from app.ui.common import attempt, bind, ok, problem
from app.ui.guard import guarded
from storage.artifacts import ArtifactStore
from storage.db import Database
from storage.ids import parse_id

BASE_CHOICE = "frozen base encoder"
# The service's keys and the headers a designer reads (short words: narrow columns wrap at spaces).
HISTORY_HEADERS = {
    "version": "version",
    "active": "active",
    "trigger": "by",  # auto (after new labels) or manual
    "method_name": "method",  # ConvFiT Stage 2, also for a version recorded as fast
    "accuracy": "accuracy",
    "macro_f1": "macro F1",
    "frozen_accuracy": "frozen accuracy",
    "silhouette": "silhouette",
    "split": "scored on",
    "train_s": "train s",
    "size_kb": "size MB",
    "dataset": "dataset",
    "created": "created",
    "note": "note",
}
HISTORY_COLUMNS = list(HISTORY_HEADERS.values())
HISTORY_WIDTHS: list[str | int] = [
    "6%",  # version
    "5%",  # active
    "5%",  # by
    "7%",  # method
    "8%",  # accuracy
    "7%",  # macro F1
    "8%",  # frozen accuracy
    "8%",  # silhouette
    "7%",  # scored on
    "6%",  # train s
    "7%",  # size MB
    "8%",  # dataset
    "8%",  # created
    "10%",  # note
]


def history_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The history rows as the table shows them: the headers above, the size in MB."""
    frame = pd.DataFrame(rows, columns=list(HISTORY_HEADERS))
    frame["size_kb"] = (frame["size_kb"] / 1024).round(1)
    return frame.rename(columns=HISTORY_HEADERS)


def versions_of(factories: FactoryBuilder, p: ProjectHandle | None) -> tuple[Any, ...]:
    """:func:`load_history` with the process's model files (the frozen base's int8 copy)."""
    return load_history(factories.db, p, factories.models.artifacts)


def version_choices(rows: list[dict[str, Any]]) -> list[str]:
    return [BASE_CHOICE] + [f"v{r['version']}" for r in rows]


def parse_version(choice: str | None) -> int | None:
    m = re.fullmatch(r"v(\d+)", choice or "")
    return parse_id(m.group(1), "version number") if m else None


def load_history(
    db: Database, p: ProjectHandle | None, artifacts: ArtifactStore | None = None
) -> tuple[Any, ...]:
    """The history table, the three version pickers (active version preselected) and the line
    that says what serves (or why none of it could be read); ``artifacts``: where a frozen
    base's int8 copy is found."""
    rows: list[dict[str, Any]] = []
    serving = ""
    if p is not None:
        found, err = attempt(lambda: version_svc.history(db, p))
        said, err = (
            attempt(lambda: version_svc.serving(db, p, artifacts)) if not err else (None, err)
        )
        rows, serving = found or [], problem(err, notify=False) if err else said or ""
    frame = history_frame(rows)
    choices = version_choices(rows)
    active = next((f"v{r['version']}" for r in rows if r["active"]), BASE_CHOICE)
    return (
        frame,
        gr.update(choices=choices, value=active),
        gr.update(choices=choices, value=choices[-1] if len(choices) > 1 else BASE_CHOICE),
        gr.update(choices=choices, value=active),
        serving,
    )


def make_active(factories: FactoryBuilder, p: ProjectHandle | None, choice: str) -> str:
    if p is None:
        return problem("Pick a project first.")
    msg, err = attempt(lambda: version_svc.activate(factories, p, parse_version(choice)))
    return problem(err) if err else ok(msg or "")


def compare(db: Database, p: ProjectHandle | None, a: str, b: str) -> tuple[Any, str]:
    """Per-intent F1 of two versions (or the frozen encoder and a version) and the change,
    worst first."""
    va, vb = parse_version(a), parse_version(b)
    if p is None or (va is None and vb is None):
        return gr.update(visible=False), problem(
            "Pick a trained version on at least one side to compare."
        )
    res, err = attempt(lambda: version_svc.compare(db, p, va, vb))
    if err or res is None:
        return gr.update(visible=False), problem(err or "")
    frame = pd.DataFrame(res["per_intent"]).rename(
        columns={"f1_a": f"F1 {a}", "f1_b": f"F1 {b}", "delta": "change"}
    )
    acc_a, acc_b = res["a"]["accuracy"], res["b"]["accuracy"]
    head = f"Accuracy {a}: {acc_a:.3f} → {b}: {acc_b:.3f}" if acc_a and acc_b else ""
    return gr.update(value=frame, visible=True), head


@dataclass
class VersionsSection:
    history: gr.Dataframe
    pick: gr.Dropdown
    cmp_a: gr.Dropdown
    cmp_b: gr.Dropdown
    serving: gr.Markdown

    @property
    def outputs(self) -> list[Any]:
        """In the order :func:`load_history` returns them."""
        return [self.history, self.pick, self.cmp_b, self.cmp_a, self.serving]


def build_versions_section(
    factories: FactoryBuilder, project: gr.Dropdown, message: gr.Markdown
) -> VersionsSection:
    gr.Markdown("### Model versions")
    serving = gr.Markdown("", elem_id="serving")
    history = gr.Dataframe(
        headers=HISTORY_COLUMNS,
        interactive=False,
        wrap=True,
        column_widths=HISTORY_WIDTHS,
        elem_id="versions",
    )
    with gr.Row(equal_height=True):
        pick = gr.Dropdown([BASE_CHOICE], value=BASE_CHOICE, label="Version", scale=2)
        activate = gr.Button("Make active (roll back / forward)", scale=1, elem_id="activate")
        cmp_a = gr.Dropdown([], label="Compare", scale=1)
        cmp_b = gr.Dropdown([], label="with", scale=1)
        compare_btn = gr.Button("Compare", scale=1)
    compare_table = gr.Dataframe(interactive=False, visible=False, elem_id="compare")
    section = VersionsSection(history, pick, cmp_a, cmp_b, serving)
    activate.click(
        guarded(TRAIN)(bind(make_active, factories)),
        [project, pick],
        [message],
        api_name="activate_version",
    ).then(bind(versions_of, factories), [project], section.outputs, api_visibility="private")
    compare_btn.click(
        bind(compare, factories.db),
        [project, cmp_a, cmp_b],
        [compare_table, message],
        api_visibility="private",
    )
    return section
