"""Projects: listing, creating, and the demo project written on first start."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from app.access import ProjectHandle, visible_projects, writing
from app.access.auth import current_actor
from app.formats import parse_csv
from app.project_settings import ProjectSettings
from app.services.projects.io import import_utterances
from app.serving.compute import new_project_encoder
from app.serving.live import LivePools
from app.serving.pools import project_anchors
from core.multilabel.rule import is_multilabel_count
from core.retrieval.anchors import humanise
from core.retrieval.scope import OUT_OF_SCOPE
from storage.db import CATALOG, Database
from storage.projects import (
    count_intents,
    create_project,
    list_projects,
    set_base_encoder,
    set_project_setting,
)
from storage.tables import SPLITS
from storage.users import record_event
from storage.utterances import count_utterances, count_with_context, label_counts

logger = logging.getLogger(__name__)

DEMO_PROJECT = "Demo: Acme support"


@dataclass(frozen=True)
class ProjectSummary:
    id: int
    name: str
    base_encoder: str
    read_only: bool
    n_intents: int  # out_of_scope (a pseudo-intent) left out
    n_train: int
    n_test: int
    n_unlabelled: int
    multi_label: bool
    active_model_version_id: int | None
    # how far the background encoding of its rows is (issue 72: EncodingProgress.to_dict; None:
    # not asked for, or not known where it was asked)
    encoding: dict[str, Any] | None = None

    def headline(self) -> str:
        """The project's name and :meth:`details`, as plain text."""
        return f"{self.name} · {self.details()}"

    def details(self) -> str:
        """Intents, splits, kind and the model that serves, as plain text."""
        model = (
            f"model v{self.active_model_version_id}"
            if self.active_model_version_id
            else f"frozen {self.base_encoder}"
        )
        kind = "multi-label" if self.multi_label else "single-label"
        ro = " · read-only" if self.read_only else ""
        return (
            f"{self.n_intents} intents · {self.n_train} train · {self.n_test} test · "
            f"{self.n_unlabelled} unlabelled · {kind} · {model}{ro}"
        )


def project_names(db: Database) -> list[str]:
    """The names of the projects the acting user sees (:func:`app.access.visible_projects`)."""
    return visible_projects(db)


def new_project(db: Database, name: str, base_encoder: str | None = None) -> str:
    """Create the empty project ``name`` on ``base_encoder`` (None: the one this device's compute
    budget starts a project on, :func:`app.serving.compute.new_project_encoder`); returns its name."""
    from core.encoding.registry import resolve_path

    base_encoder = base_encoder or new_project_encoder()
    resolve_path(base_encoder)  # refuse unknown encoders before writing anything
    who = current_actor()
    with db.write(CATALOG) as s:  # it reads the names first: a stale read would fail at once
        made = create_project(s, name, base_encoder=base_encoder).name
        record_event(s, "project_created", who.name, actor=who.name, detail=repr(made))
        return made


def summary(db: Database, p: ProjectHandle, live: LivePools | None = None) -> ProjectSummary:
    """The project's counts and what serves it; with ``live``, how far the encoding of its
    rows is (:func:`app.services.queue.queue.encoding`)."""
    from app.services.queue.queue import encoding

    said = encoding(live, p) if live is not None else None
    with db.session() as s:
        n = {split: count_utterances(s, p.id, split=split) for split in SPLITS}
        return ProjectSummary(
            id=p.id,
            name=p.name,
            base_encoder=p.base_encoder,
            read_only=p.read_only,
            # out_of_scope is no intent (the answer that none applies): not counted
            n_intents=count_intents(s, p.id, excluding=OUT_OF_SCOPE),
            n_train=n["train"],
            n_test=n["test"],
            n_unlabelled=n["unlabelled"],
            multi_label=is_multilabel_count(*label_counts(s, p.id)),
            active_model_version_id=p.active_version_id,
            encoding=said.to_dict() if said is not None else None,
        )


def ensure_demo_project(db: Database) -> str | None:
    """Create the demo project from ``assets/demo_project.csv`` when the database has no project."""
    with db.session() as s:
        if list_projects(s):
            return None
    data = resources.files("assets").joinpath("demo_project.csv").read_bytes()
    result = import_utterances(db, DEMO_PROJECT, parse_csv(data))
    logger.info("created the demo project: %s", result.message())
    return DEMO_PROJECT


def out_of_scope(live: LivePools, p: ProjectHandle) -> dict[str, Any]:
    """The project's out-of-scope trade-off and the thresholds calibrated from its pool now:
    ``target_recall`` (None: off), ``thresholds``, ``fallback`` (intents on the project-wide
    threshold) and ``message`` (what was calibrated, in words)."""
    target = p.settings.oos_target_recall
    cal = live.pool(p.id).calibration
    if target is None:
        message = "Out-of-scope detection is off: every question gets its top intent."
    elif cal is None:
        message = (
            "No out-of-scope thresholds: the project has no single-label labelled pool "
            "(a multi-label project's head decides 'no intent' itself)."
        )
    else:
        message = cal.message()
    return {
        "target_recall": target,
        "thresholds": dict(cal.thresholds) if cal else {},
        "fallback": list(cal.fallback) if cal else [],
        "message": message,
    }


def anchors(db: Database, p: ProjectHandle) -> dict[str, Any]:
    """The project's anchors (:mod:`core.retrieval.anchors`): ``weight`` (0: off), ``texts``
    (intent -> its description or humanised name) and a one-line ``message``."""
    with db.session() as s:
        texts, weight = project_anchors(s, p.id, p.settings)
        described = sum(1 for n, t in texts.items() if t != humanise(n))
    message = (
        f"Anchors on (weight {weight:g}): {len(texts)} intent(s), {described} by their "
        "description, the others by their name."
        if weight
        else "Anchors off: intents are predicted from their labelled examples only."
    )
    return {"weight": weight, "texts": texts, "message": message}


def context_encoding(db: Database, p: ProjectHandle) -> dict[str, Any]:
    """Whether the project encodes each utterance after its context (the turn before it):
    ``encode_context``, ``with_context`` (how many utterances carry one) and ``message``."""
    with db.session() as s:
        on = p.settings.encode_context
        n = count_with_context(s, p.id)
    state = (
        "on: each utterance is encoded after its context ('context [SEP] utterance'), at "
        "training, in the pool and for questions sent with one"
        if on
        else "off: utterances are encoded alone"
    )
    return {
        "encode_context": on,
        "with_context": n,
        "message": f"Context encoding is {state}. {n:,} utterance(s) carry a context.",
    }


def settings(db: Database, p: ProjectHandle) -> ProjectSettings:
    """The project's settings (:class:`app.project_settings.ProjectSettings`)."""
    return p.settings


def set_settings(db: Database, p: ProjectHandle, changes: Mapping[str, Any]) -> ProjectSettings:
    """Set several settings at once (name -> value as typed, see
    :func:`app.project_settings.parse_setting`; ``base_encoder``: a registered encoder installed
    here, :mod:`app.services.models.encoders`) and return them all after it. Every value is checked
    before anything is written: one bad value changes nothing."""
    from app.services.models.encoders import SETTING, check_encoder

    changes = dict(changes)
    encoder = check_encoder(changes.pop(SETTING)) if SETTING in changes else None
    after = p.settings.with_texts(changes)
    with writing(db, p) as s:
        for name, value in after.to_dict().items():
            if name in changes:
                set_project_setting(s, p.id, name, value)
        if encoder is not None and encoder != p.base_encoder:
            set_base_encoder(s, p.id, encoder)
    return after
