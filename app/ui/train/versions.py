"""Train tab, Versions section: the history of model versions with the disk their files use,
make one active (roll back or forward), pin or unpin one, remove its files, apply the retention
rule now (:mod:`app.services.models.retention`), and compare two versions' per-intent F1."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd

from app.access import ProjectHandle
from app.access.actions import TRAIN
from app.config import DEFAULT_VERSION_DISK_MB
from app.services.models import version_files
from app.services.models import versions as version_svc
from app.serving.factories import FactoryBuilder
from app.serving.training_queue import TrainingQueue
from app.ui.common import attempt, bind, ok, problem
from app.ui.guard import guarded
from storage.artifacts import ArtifactStore
from storage.db import Database
from storage.ids import parse_id

BASE_CHOICE = "frozen base encoder"
# The service's keys and the headers a designer reads: one line a version (the picked version's
# note is said under the table; the space's silhouette and the dataset's hash are the CLI's and
# REST's to say).
HISTORY_HEADERS = {
    "version": "version",
    "active": "active",
    "trigger": "by",  # auto (after new labels) or manual
    "method_name": "method",  # ConvFiT Stage 2, also for a version recorded as fast
    "accuracy": "accuracy",
    "macro_f1": "macro F1",
    "frozen_accuracy": "frozen base",  # the frozen base encoder's accuracy
    "split": "scored on",
    "train_s": "train s",
    "disk_bytes": "disk MB",  # its artifact and its int8 copy's, as on disk now
    "files": "files",  # kept (and why) or removed, by the retention rule
    "created": "created",
}
HISTORY_COLUMNS = list(HISTORY_HEADERS.values())
HISTORY_WIDTHS: list[str | int] = [
    "7%",  # version
    "6%",  # active
    "6%",  # by
    "13%",  # method
    "8%",  # accuracy
    "8%",  # macro F1
    "11%",  # frozen base
    "8%",  # scored on
    "7%",  # train s
    "7%",  # disk MB
    "8%",  # files
    "11%",  # created
]


def history_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The history rows as the table shows them: the headers above, the disk in MB (10^6
    bytes, as the disk line counts)."""
    frame = pd.DataFrame(rows, columns=list(HISTORY_HEADERS))
    frame["disk_bytes"] = (frame["disk_bytes"] / 1e6).round(1)
    return frame.rename(columns=HISTORY_HEADERS)


def versions_of(training: TrainingQueue, p: ProjectHandle | None) -> tuple[Any, ...]:
    """:func:`load_history` with the process's model files (the frozen base's int8 copy) and
    the deployment's disk budget."""
    return load_history(training.db, p, training.artifacts, training.settings.version_disk_mb)


def version_choices(rows: list[dict[str, Any]]) -> list[str]:
    return [BASE_CHOICE] + [f"v{r['version']}" for r in rows]


def parse_version(choice: str | None) -> int | None:
    m = re.fullmatch(r"v(\d+)", choice or "")
    return parse_id(m.group(1), "version number") if m else None


def load_history(
    db: Database,
    p: ProjectHandle | None,
    artifacts: ArtifactStore | None = None,
    budget_mb: int = DEFAULT_VERSION_DISK_MB,
) -> tuple[Any, ...]:
    """The history table, the three version pickers (active version preselected), the line
    that says what serves (or why none of it could be read) and the one that says the disk the
    versions use of ``budget_mb``; ``artifacts``: where a frozen base's int8 copy is found."""
    rows: list[dict[str, Any]] = []
    serving = disk = ""
    if p is not None:
        found, err = attempt(lambda: version_svc.history(db, p))
        said, err = (
            attempt(lambda: version_svc.serving(db, p, artifacts)) if not err else (None, err)
        )
        rows, serving = found or [], problem(err, notify=False) if err else said or ""
        used, _ = attempt(lambda: version_files.disk_of(db, p, budget_mb))
        disk = disk_line(used, p.settings.keep_versions) if used is not None else ""
    frame = history_frame(rows)
    choices = version_choices(rows)
    active = next((f"v{r['version']}" for r in rows if r["active"]), BASE_CHOICE)
    return (
        frame,
        gr.update(choices=choices, value=active),
        gr.update(choices=choices, value=choices[-1] if len(choices) > 1 else BASE_CHOICE),
        gr.update(choices=choices, value=active),
        serving,
        disk,
    )


def disk_line(used: Any, keep: int) -> str:
    """The disk the versions use, and what the retention rule keeps."""
    return (
        f"{used.words()} Kept: the active, the newest {keep} (a project setting), pinned, "
        "activated, exported; others' files go after a retrain."
    )


def picked_note(db: Database, p: ProjectHandle | None, choice: str | None) -> str:
    """The picked version's note (how it came to be and its gate's verdict), under the table."""
    version = parse_version(choice)
    if p is None or version is None:
        return ""
    rows, err = attempt(lambda: version_svc.history(db, p))
    if err:
        return problem(err, notify=False)
    note = next((r["note"] for r in rows or [] if r["version"] == version), "")
    return f"**v{version}:** {note}" if note else ""


def make_active(factories: FactoryBuilder, p: ProjectHandle | None, choice: str) -> str:
    if p is None:
        return problem("Pick a project first.")
    msg, err = attempt(lambda: version_svc.activate(factories, p, parse_version(choice)))
    return problem(err) if err else ok(msg or "")


def _picked(choice: str | None) -> int:
    version = parse_version(choice)
    if version is None:
        raise ValueError("Pick a trained version (the frozen base encoder has no files).")
    return version


def pin(factories: FactoryBuilder, p: ProjectHandle | None, choice: str) -> str:
    """Pin the picked version: it keeps its files whatever else the rule says."""
    if p is None:
        return problem("Pick a project first.")
    msg, err = attempt(lambda: version_files.pin(factories.db, p, _picked(choice)))
    return problem(err) if err else ok(msg or "")


def unpin(factories: FactoryBuilder, p: ProjectHandle | None, choice: str) -> str:
    if p is None:
        return problem("Pick a project first.")
    msg, err = attempt(lambda: version_files.pin(factories.db, p, _picked(choice), pinned=False))
    return problem(err) if err else ok(msg or "")


def remove_files(factories: FactoryBuilder, p: ProjectHandle | None, choice: str) -> str:
    """Remove the picked version's files (its row stays): not the active one, nor a pinned one."""
    if p is None:
        return problem("Pick a project first.")
    store = factories.models.artifacts
    msg, err = attempt(lambda: version_files.remove_files(factories.db, store, p, _picked(choice)))
    return problem(err) if err else ok(msg or "")


def prune(factories: FactoryBuilder, p: ProjectHandle | None) -> str:
    """Apply the retention rule now."""
    if p is None:
        return problem("Pick a project first.")
    store = factories.models.artifacts
    done, err = attempt(lambda: version_files.prune(factories.db, store, p))
    if err or done is None:
        return problem(err or "Could not apply the retention rule.")
    return ok(done.message(p.name))


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
    disk: gr.Markdown

    @property
    def outputs(self) -> list[Any]:
        """In the order :func:`load_history` returns them."""
        return [self.history, self.pick, self.cmp_b, self.cmp_a, self.serving, self.disk]


def build_versions_section(
    factories: FactoryBuilder, training: TrainingQueue, project: gr.Dropdown, message: gr.Markdown
) -> VersionsSection:
    serving = gr.Markdown("", elem_id="serving")
    disk = gr.Markdown("", elem_id="versions-disk")
    history = gr.Dataframe(
        headers=HISTORY_COLUMNS,
        interactive=False,
        wrap=False,
        column_widths=HISTORY_WIDTHS,
        max_height=160,  # three versions, then the table scrolls (it fits 1280x720)
        buttons=[],  # no toolbar row: the CLI's and REST's versions are there to copy
        elem_id="versions",
    )
    note = gr.Markdown("", elem_id="version-note")
    with gr.Row(equal_height=True):
        pick = gr.Dropdown([BASE_CHOICE], value=BASE_CHOICE, label="Version", scale=2)
        activate = gr.Button("Make active (roll back / forward)", scale=2, elem_id="activate")
        pin_btn = gr.Button("Pin (keep its files)", scale=1, elem_id="pin-version")
        unpin_btn = gr.Button("Unpin", scale=1, elem_id="unpin-version")
        remove_btn = gr.Button("Remove its files", scale=1, elem_id="remove-version-files")
    with gr.Row(equal_height=True):
        cmp_a = gr.Dropdown([], label="Compare", scale=2)
        cmp_b = gr.Dropdown([], label="with", scale=2)
        compare_btn = gr.Button("Compare", scale=1)
        prune_btn = gr.Button("Apply the retention rule now", scale=2, elem_id="prune-versions")
    said = gr.Markdown(elem_id="versions-status")  # what pin, unpin, remove and the rule did
    compare_table = gr.Dataframe(interactive=False, visible=False, elem_id="compare")
    section = VersionsSection(history, pick, cmp_a, cmp_b, serving, disk)
    pick.change(bind(picked_note, factories.db), [project, pick], [note], api_visibility="private")
    reload: dict[str, Any] = {"api_visibility": "private"}
    activate.click(
        guarded(TRAIN)(bind(make_active, factories)),
        [project, pick],
        [message],
        api_name="activate_version",
    ).then(bind(versions_of, training), [project], section.outputs, **reload)
    # pin, unpin, remove: the version picked; the rule: the project (each the same permission
    # as making a version active)
    for button, fn, name in (
        (pin_btn, pin, "pin_version"),
        (unpin_btn, unpin, "unpin_version"),
        (remove_btn, remove_files, "remove_version_files"),
    ):
        button.click(
            guarded(TRAIN)(bind(fn, factories)), [project, pick], [said], api_name=name
        ).then(bind(versions_of, training), [project], section.outputs, **reload)
    prune_btn.click(
        guarded(TRAIN)(bind(prune, factories)), [project], [said], api_name="prune_versions"
    ).then(bind(versions_of, training), [project], section.outputs, **reload)
    compare_btn.click(
        bind(compare, factories.db),
        [project, cmp_a, cmp_b],
        [compare_table, message],
        api_visibility="private",
    )
    return section
