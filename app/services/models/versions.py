"""Model versions: history with metrics, activation (rollback) and comparison."""

from __future__ import annotations

from typing import Any

from app.access import ProjectHandle
from app.access.actions import TRAIN
from app.services.models import retention
from app.serving.factories import FactoryBuilder
from app.serving.int8 import (
    base_int8_record,
    served_metrics,
    serves_base_int8,
    serves_int8,
    serving_line,
)
from core.encoding.registry import Encoder
from core.evaluation.version_metrics import VersionMetrics
from core.retrieval.factory import PredictorFactory
from core.training import method_title
from storage import jobs, versions
from storage.artifacts import ArtifactStore
from storage.db import Database, WriteLock
from storage.errors import NotFoundError
from storage.tables import ModelVersion

BASE = "base"  # the frozen base encoder, as a version selector
ACTIVE = "active"
Version = int | str | None  # model version id, "base", "active" (None = active)


def _selected(db: Database, p: ProjectHandle, version: Version) -> tuple[ModelVersion | None, str]:
    """The model version a selector names (None = the frozen base) and the project's base."""
    with db.session() as s:
        if version == BASE:
            return None, p.base_encoder
        if version in (None, ACTIVE):
            return versions.active_version(s, p.id), p.base_encoder
        try:
            mv = versions.get_version(s, p.id, int(version))
        except NotFoundError:
            raise ValueError(f"No model version #{version} in project {p.name!r}.") from None
    retention.require_files(mv, "evaluated or shown")
    return mv, p.base_encoder


def resolve_encoder(
    factories: FactoryBuilder, p: ProjectHandle, version: Version
) -> tuple[Encoder, str]:
    """The encoder of a version selector and its display label (``v3 (ConvFiT Stage 2)``,
    ``frozen minilm``)."""
    mv, base = _selected(factories.db, p, version)
    label = _label(mv, base)
    return factories.models.encoder_for_version(mv, base), label


def resolve_factory(
    factories: FactoryBuilder, p: ProjectHandle, version: Version, *, served: bool = True
) -> tuple[PredictorFactory, str]:
    """The Predictor factory of a version selector (its encoder, anchors, context encoding,
    head) and its display label: in the space that serves the version
    (:meth:`FactoryBuilder.version_factory` ``served``: its int8 copy when that serves), so an
    evaluation, a drill-down or a map shows what the version answers; ``served=False``: its
    fp32 encoder (what a bundle exports)."""
    mv, base = _selected(factories.db, p, version)
    label = _label(mv, base)
    return factories.version_factory(p.id, mv, base, p.settings, served=served), label


def _label(mv: ModelVersion | None, base: str) -> str:
    """A version as a view's title names it, its method as the Train tab does."""
    return f"v{mv.id} ({method_title(mv.method)})" if mv is not None else f"frozen {base}"


def head_options(db: Database, p: ProjectHandle, version: Version) -> dict[str, Any]:
    """The options a version's multi-label head was trained with (empty: the defaults)."""
    mv, _ = _selected(db, p, version)
    return dict(VersionMetrics.from_dict(mv.metrics).head) if mv is not None else {}


def _round(value: Any) -> Any:
    return round(value, 3) if isinstance(value, float) else value


def history(db: Database, p: ProjectHandle) -> list[dict[str, Any]]:
    """Every model version of the project, newest first, with its headline metrics; the active
    one says which encoder serves it (``serving``: ``int8`` or ``fp32``; the others ``None``)."""
    with db.session() as s:
        active_id, settings = p.active_version_id, p.settings
        rows = versions.history(s, p.id)
        job = jobs.active_job(s, p.id)
    files = retention.history_fields(
        (mv for mv, _ in rows),
        active=active_id,
        newest=settings.keep_versions,
        in_use={job.model_version_id} if job is not None and job.model_version_id else set(),
    )
    out = []
    for mv, dataset_hash in rows:
        m = served_metrics(VersionMetrics.from_dict(mv.metrics), settings)
        out.append(
            {
                "version": mv.id,
                "active": mv.id == active_id,
                "serving": (
                    ("int8" if serves_int8(m, settings) else "fp32") if mv.id == active_id else None
                ),
                "method": mv.method,  # as recorded: a version trained as fast says fast
                "method_name": method_title(mv.method),
                # who asked for it: "auto" (after new labels) or "manual"
                "trigger": str(m.extra.get("trigger") or "manual"),
                # the checkpoint of its job it holds (an anytime retrain's first pass, or all)
                "steps": m.extra.get("steps"),
                "of_steps": m.extra.get("of_steps") or m.extra.get("steps"),
                "measured": m.measured_with,
                "accuracy": _round(m.accuracy),
                "macro_f1": _round(m.macro_f1),
                "frozen_accuracy": _round(m.base.accuracy if m.base else None),
                "silhouette": _round(m.silhouette),
                "split": m.split,
                "train_s": m.train_seconds,
                "size_kb": round((mv.artifact_size or 0) / 1024, 1),
                "dataset": dataset_hash[:12],
                "created": mv.created_at.strftime("%Y-%m-%d %H:%M"),
                "note": mv.note,
                **files[mv.id],  # pinned, files, files_removed, disk_bytes (the retention rule)
            }
        )
    return out


def serving(db: Database, p: ProjectHandle, artifacts: ArtifactStore | None = None) -> str:
    """Which encoder serves the project's predictions now, in one line (see
    :func:`app.serving.int8.serving_line`); ``artifacts``: where a frozen base's int8 copy
    would be found (:mod:`app.services.training.base_int8`)."""
    mv, base = _selected(db, p, ACTIVE)
    if mv is None:
        copy = (base_int8_record(artifacts, base) if artifacts is not None else None) or {}
        if serves_base_int8(copy, p.settings):
            checked = copy.get("checked_on") or {}
            on = f", checked on project {checked['project']!r}" if checked.get("project") else ""
            return f"Serving: the frozen {base} encoder's int8 copy ({copy.get('reason')}{on})."
        return f"Serving: the frozen {base} encoder (fp32)."
    m = VersionMetrics.from_dict(mv.metrics)
    if m.int8.get("pending"):  # its job builds the int8 copy, unless it stopped meanwhile
        with db.session() as s:
            job = jobs.active_job(s, p.id)
        if job is None or job.model_version_id != mv.id:
            return (
                f"v{mv.id} — Serving: fp32 encoder (its int8 copy was not finished: the job "
                "building it stopped; the next retrain builds one)."
            )
    return f"v{mv.id} — " + serving_line(m, p.settings)


def activate(factories: FactoryBuilder, p: ProjectHandle, version: int | None) -> str:
    """Make ``version`` the active model (``None`` = back to the frozen base encoder)."""
    p.require_writable(TRAIN)
    if version is not None:
        with factories.db.session() as s:
            mv = versions.get_version(s, p.id, version)
        retention.require_files(mv, "activated")
        # hashed outside any transaction: a job's heartbeat committing meanwhile made the write
        # below meet a stale read snapshot ("the database is busy", issue 73 item 7)
        if mv.artifact_path and not factories.models.artifacts.verify(
            mv.artifact_path, mv.artifact_sha256 or ""
        ):
            raise ValueError(
                f"The files of v{version} are missing or changed on disk; it cannot be activated."
            )
    with factories.db.write(WriteLock.project(p.id)) as s:
        versions.set_active(s, p.id, version)
    return f"Active model: {'v' + str(version) if version else 'frozen base encoder'}."


def compare(db: Database, p: ProjectHandle, a: int | None, b: int | None) -> dict[str, Any]:
    """Headline metrics of two versions and the per-intent F1 change from a to b. ``None`` is the
    frozen base encoder, as measured on the same test set when the other version was trained."""
    if a == b:
        raise ValueError("Pick two different versions to compare.")
    with db.session() as s:
        rows = {v: versions.get_version(s, p.id, v) for v in (a, b) if v is not None}
    for mv in rows.values():
        retention.require_files(mv, "compared")
    mvs: dict[int | None, VersionMetrics] = {
        v: served_metrics(VersionMetrics.from_dict(mv.metrics), p.settings)
        for v, mv in rows.items()
    }
    if None in (a, b):
        base = mvs[b if a is None else a].base
        if base is None:
            raise ValueError("That version has no measurement of the frozen encoder to compare.")
        mvs[None] = base
    return {
        "a": {"version": a, "accuracy": mvs[a].accuracy, "macro_f1": mvs[a].macro_f1},
        "b": {"version": b, "accuracy": mvs[b].accuracy, "macro_f1": mvs[b].macro_f1},
        "per_intent": per_intent_delta(mvs[a], mvs[b]),
    }


def metrics(db: Database, p: ProjectHandle, version: int | None = None) -> VersionMetrics:
    """The stored metrics of a version (default: the active one; empty: none), of the encoder
    that serves it (:func:`app.serving.int8.served_metrics`)."""
    with db.session() as s:
        try:
            mv = (
                versions.get_version(s, p.id, version)
                if version
                else versions.active_version(s, p.id)
            )
        except NotFoundError:
            return VersionMetrics()
    return served_metrics(
        VersionMetrics.from_dict(mv.metrics if mv is not None else None), p.settings
    )


def per_intent_delta(a: VersionMetrics, b: VersionMetrics) -> list[dict[str, Any]]:
    """Per-intent F1 of version a and b and the change (b − a), worst change first."""
    pa, pb = a.per_intent, b.per_intent
    rows = []
    for name in sorted(set(pa) | set(pb)):
        fa = pa.get(name, {}).get("f1")
        fb = pb.get(name, {}).get("f1")
        delta = None if fa is None or fb is None else round(fb - fa, 4)
        rows.append({"intent": name, "f1_a": fa, "f1_b": fb, "delta": delta})
    rows.sort(key=lambda r: (r["delta"] is None, r["delta"] if r["delta"] is not None else 0))
    return rows
