"""Model bundles from the app's side: export a model version of a project as a bundle (optionally
with an int8 ONNX encoder that must pass the parity check), and import a bundle as a new
read-only project whose exemplars are its labelled pool and whose encoder is the bundle's.

The bundle format and its safe loading live in :mod:`core.bundle`; this module only gathers the
project's data and writes rows.
"""

from __future__ import annotations

import itertools
import json
import logging
import shutil
import tempfile
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from app.access import ProjectHandle
from app.access.auth import current_actor
from app.limits import BUNDLE_PROJECTS_PER_USER as BUNDLES
from app.project_settings import ANCHOR_SETTING, OOS_SETTING, ProjectSettings
from app.services.models.versions import Version, resolve_factory
from app.services.projects import accounts as security
from app.serving.factories import FactoryBuilder
from app.serving.live import LivePools
from app.serving.oos_correction import version_correction
from core.bundle import open_bundle, write_bundle
from core.encoding.registry import LABEL_DIR, Encoder
from core.evaluation.oos import OUT_OF_SCOPE, calibrate_predictor, in_scope_labels
from core.evaluation.version_metrics import VersionMetrics
from core.multilabel.head import HEAD_DIR
from core.multilabel.rule import is_multilabel
from core.retrieval.anchors import humanise
from storage import versions
from storage.artifacts import tree_sha256
from storage.datasets import snapshot
from storage.errors import NotFoundError, StorageError
from storage.imports import import_rows
from storage.members import read_only_memberships, set_member
from storage.names import project_name_problem
from storage.projects import create_project, describe_intents, names_starting
from storage.utterances import NewUtterance, list_utterances
from storage.versions import NewVersion

logger = logging.getLogger(__name__)


def _version_row(factories: FactoryBuilder, p: ProjectHandle, version: Version) -> dict[str, Any]:
    """What the manifest says about the version (None/"active" = the active one)."""
    with factories.db.session() as s:
        base = p.base_encoder
        if version == "base" or (version in (None, "active") and not p.active_version_id):
            return {"id": None, "method": "frozen", "base": base, "dir": None}
        try:
            mv = (
                versions.active_version(s, p.id)
                if version in (None, "active")
                else versions.get_version(s, p.id, int(version))
            )
        except NotFoundError:
            raise ValueError(f"No model version {version} in project {p.name!r}.") from None
    assert mv is not None
    if not mv.artifact_path or not factories.models.artifacts.verify(
        mv.artifact_path, mv.artifact_sha256 or ""
    ):
        raise ValueError(f"The files of v{mv.id} are missing or changed on disk.")
    measured = VersionMetrics.from_dict(mv.metrics)
    return {
        "id": mv.id,
        "method": mv.method,
        "base": mv.base_encoder,
        "dir": factories.models.artifacts.path(mv.artifact_path),
        "config": dict(mv.config or {}),
        "measured": measured,
        "row": mv,
    }


def _recorded(measured: VersionMetrics | None, variant: str | None) -> dict[str, Any]:
    """The manifest's ``metrics`` (labelled by the encoder they measured: a bundle whose int8
    copy is the ``variant`` the version measured carries that measurement, any other bundle the
    fp32 encoder's) and ``base_metrics`` (the frozen base on the same rows)."""
    if measured is None:
        return {"metrics": {}, "base_metrics": {}}
    shown = measured.served(variant is not None and variant == measured.int8.get("variant"))
    return {
        "metrics": replace(shown, base=None).to_dict(),
        "base_metrics": measured.base.to_dict() if measured.base else {},
    }


def export_bundle(
    live: LivePools,
    p: ProjectHandle,
    out: str | Path,
    *,
    version: Version = None,
    int8: bool = False,
) -> dict[str, Any]:
    """Write ``out`` (.zip) for a version of ``project`` and return its manifest summary.

    The encoder travels once: with ``int8`` as its int8 ONNX graph alone (a tuned version's fp32
    weights stay home), else fp32, as the version's files with an ONNX graph over them
    (:func:`_fp32_graph`); either way the bundle's ``predict.py`` runs without the app.

    Raises:
        ValueError: unknown version, no labelled pool, or (with ``int8``) no texts to check parity.
        core.bundle.onnx.OnnxParityError: the int8 encoder disagrees with fp32 on more than 1 % of
            the evaluation split; nothing is written.
    """
    out = Path(out)
    if out.suffix.lower() != ".zip":
        raise ValueError("A bundle is a .zip file: give a path ending in .zip.")
    row = _version_row(live.factories, p, version)
    # the fp32 encoder travels (and, with ``int8``, its int8 copy exported here)
    factory, _ = resolve_factory(
        live.factories, p, row["id"] if row["id"] else "base", served=False
    )
    encoder = cast(Encoder, factory.encoder)
    with live.db.session() as s:
        project_id, rows = p.id, list_utterances(s, p.id)
        dataset_hash = snapshot(s, p.id).content_hash
    if p.settings.encode_context:  # a bundle encodes the utterance alone: it would drift
        raise ValueError(
            "This project encodes each utterance after its context, and a bundle predicts from "
            "the utterance alone. Turn context encoding off to export a bundle "
            "(intent-studio context --encode off)."
        )
    pool = [r for r in rows if r.split == "train" and in_scope_labels(r.labels)]
    if not pool:
        raise ValueError("This project has no labelled training utterances to put in a bundle.")
    texts, labels = [r.text for r in pool], [in_scope_labels(r.labels) for r in pool]
    vectors = live.cache.encode(encoder, texts)
    # the out-of-scope thresholds travel: calibrated in this version's space with its anchors,
    # out of fold over the train pool, as the app does
    out_of_scope = [r.text for r in rows if r.split == "train" and OUT_OF_SCOPE in r.labels]
    calibration = None
    target = p.settings.oos_target_recall
    if target is not None and not is_multilabel(labels):  # a head decides "no intent" itself
        # the factory's Predictor: its anchors, as the bundle predicts
        predictor = factory.replace(head=None, thresholds={}).build(texts, labels, vectors=vectors)
        oos = live.cache.encode(encoder, out_of_scope) if out_of_scope else None
        # the version's held-out correction, as its live pool applies it
        found = version_correction(live.db, row.get("row"), p.settings)
        correction = (
            found.for_items(dict(enumerate(zip(texts, labels, strict=True)))) if found else None
        )
        calibration = calibrate_predictor(
            predictor, out_of_scope=oos, target_recall=target, correction=correction
        )
    fields: dict[str, Any] = {
        "project": p.name,
        "model_version": row["id"],
        "method": row["method"],
        "config": row.get("config", {}),
        **_recorded(row.get("measured"), None),
        "dataset_hash": dataset_hash,
        "multi_label": is_multilabel(labels),
    }
    if calibration is not None:
        fields["thresholds"] = calibration.thresholds
        fields["out_of_scope"] = calibration.to_dict()
    # a version without a head serves one fitted on its vectors (LivePools.space_head): the
    # bundle carries it, so it decides as the app does
    head = (
        live.space_head(project_id, encoder, p.settings)
        if fields["multi_label"] and factory.head is None
        else None
    )
    with tempfile.TemporaryDirectory(prefix="bundle-") as tmp:
        extra: dict[str, Path] = {}
        if head is not None:
            extra[HEAD_DIR] = head.save(Path(tmp) / HEAD_DIR)
        if row["dir"] is not None and (row["dir"] / HEAD_DIR).is_dir():
            extra[HEAD_DIR] = row["dir"] / HEAD_DIR  # the multi-label head and its thresholds
        encoder_dir, onnx_only = row["dir"], False
        if int8:
            from core.bundle.onnx import export_onnx

            evaluation = [r.text for r in rows if r.split == "test"] or texts
            exported = export_onnx(
                encoder,
                Path(tmp) / "onnx",
                pool_texts=texts,
                pool_labels=labels,
                eval_texts=evaluation,
                pool_vectors=vectors,
            )
            extra["onnx"] = Path(tmp) / "onnx"
            fields.update(_recorded(row.get("measured"), exported.variant))
            # the int8 graph is a tuned version's encoder: its fp32 weights stay home
            encoder_dir, onnx_only = None, encoder_dir is not None
        else:
            extra.update(_fp32_graph(encoder, row["dir"], Path(tmp)))
        write_bundle(
            out,
            encoder_dir=encoder_dir,
            base_encoder=row["base"],
            exemplar_texts=texts,
            exemplar_labels=labels,
            vectors=vectors,
            manifest_fields=fields,
            extra_files=extra,
            anchors=dict(factory.anchors.texts) if factory.anchors else {},
            anchor_vectors=factory.anchors.vectors if factory.anchors else None,
            anchor_weight=factory.anchors.weight if factory.anchors else 0.0,
            onnx_only=onnx_only,
        )
    version = row["id"] or "frozen base"
    security.record(live.db, "bundle_exported", f"{p.name!r}, version {version}", who=p.actor)
    return {
        "path": str(out),
        "size_mb": round(out.stat().st_size / 1e6, 2),
        "model_version": row["id"],
        "exemplars": len(texts),
        "int8": int8,
    }


def _fp32_graph(encoder: Encoder, version_dir: Path | None, tmp: Path) -> dict[str, Path]:
    """The fp32 ONNX graph of a bundle without int8 (its ``predict.py`` runs it), as extra
    files: beside a tuned version's safetensors (``encoder/``), whose bytes it reads, or in
    ``onnx/`` with its weights inside (the frozen base and an adapter carry no full weights)."""
    from core.bundle.onnx_fp32 import export_fp32

    out = tmp / "onnx"
    out.mkdir()
    weights = version_dir / "encoder" if version_dir is not None else None
    if weights is None or not weights.is_dir():
        export_fp32(encoder, out)
        return {"onnx": out}
    export_fp32(encoder, out, weights=weights)
    return {f"encoder/{path.name}": path for path in out.iterdir()}


def _bundle_settings(manifest: dict[str, Any]) -> dict[str, Any]:
    """The imported project's settings: the bundle's out-of-scope trade-off (off without one)
    and its anchors' weight (0 without anchors)."""
    oos = manifest.get("out_of_scope")
    target = oos.get("target_recall") if isinstance(oos, dict) else None
    anchors = manifest.get("anchors")
    weight = anchors.get("weight") if isinstance(anchors, dict) else None
    settings = {
        OOS_SETTING: float(target) if isinstance(target, int | float) else None,
        ANCHOR_SETTING: float(weight) if isinstance(weight, int | float) else 0.0,
    }
    ProjectSettings.from_dict(settings)  # a value out of range: refused here, never stored
    return settings


def _bundle_descriptions(contents: Any) -> dict[str, str]:
    """The intents a bundle's anchors name, with their descriptions (none where the anchor is
    the humanised name): the imported project predicts with the same anchors."""
    texts = contents.anchors[0] if contents.anchors is not None else {}
    return {name: "" if text == humanise(name) else text for name, text in texts.items()}


def _new_name(s: Any, manifest: dict[str, Any], sees_all: bool) -> str:
    """The name of a project opened from a bundle: its project's name (when it is a valid one)
    and ``(bundle)``. For someone who sees every project (the local operator, an admin) the
    first free one of ``(bundle)``, ``(bundle 2)``...; for anyone else a fresh token, so the
    name never tells which other projects exist (issue 56, row 7)."""
    named = manifest.get("project")
    base = str(named) if isinstance(named, str) else ""
    if not base or project_name_problem(base.strip()) is not None:
        base = "bundle"
    base = base.strip()[:80]
    if not sees_all:
        return f"{base} (bundle {uuid.uuid4().hex[:8]})"
    taken = names_starting(s, base)
    return next(
        name
        for k in itertools.count(1)
        if (name := f"{base} (bundle)" if k == 1 else f"{base} (bundle {k})") not in taken
    )


def import_bundle(factories: FactoryBuilder, path: str | Path, name: str | None = None) -> str:
    """Open a bundle (verified, never executing anything from it) as a new read-only project.
    In a team, whoever opens it (not an admin) becomes its member, at most
    :data:`app.limits.BUNDLE_PROJECTS_PER_USER` such projects at once.

    The bundle's base encoder must be a registry name and its weights exactly the base
    architecture's (:func:`core.bundle.weights.check_weights`), so a bundle that could not load
    never becomes a model version.

    The exemplars become the `train` pool; a tuned encoder becomes the project's active model
    version. Returns the new project's name. Nothing is written if any step fails.
    """
    contents = open_bundle(path, device=factories.models.device)  # weights checked before any row
    try:
        manifest = contents.manifest
        if manifest["encoder_kind"] == "onnx":
            raise ValueError(
                "This bundle carries its encoder as int8 ONNX only, without the fp32 weights a "
                "project serves and measures with: export the version without int8 to open it "
                "here (its predict.py, and intent-studio predict --bundle, run it as it is)."
            )
        who = current_actor()
        member = None if who.id is None or who.role == "admin" else who.id  # who sees not all
        sees_all = member is None
        model_files = [contents.root / "model.json"]
        model_files += [contents.root / d for d in ("encoder", "adapter", HEAD_DIR, LABEL_DIR)]
        has_model = (contents.root / "model.json").is_file()
        rel = f"imported/{uuid.uuid4().hex}"
        if has_model:
            with factories.models.artifacts.writing(rel) as tmp:
                for src in model_files:
                    if src.is_dir():
                        shutil.copytree(src, tmp / src.name)
                    elif src.is_file():
                        shutil.copy2(src, tmp / src.name)
        try:
            with factories.db.session() as s:
                if member is not None and read_only_memberships(s, member) >= BUNDLES:
                    raise StorageError(
                        f"{who.name} already has {BUNDLES} projects opened from bundles: ask an "
                        "admin to delete one before opening another. Nothing was changed."
                    )
                p = create_project(
                    s,
                    name.strip() if name else _new_name(s, manifest, sees_all),
                    base_encoder=str(manifest.get("base_encoder") or "minilm"),
                    description=f"Imported from bundle {Path(path).name}",
                    read_only=True,
                    settings=_bundle_settings(manifest),
                )
                import_rows(
                    s,
                    p.id,
                    [
                        NewUtterance(text, tuple(lab), "train")
                        for text, lab in zip(contents.texts, contents.labels, strict=True)
                    ],
                )
                describe_intents(s, p.id, _bundle_descriptions(contents))
                if member is not None:  # she sees what she opened
                    set_member(s, p.id, member, "designer" if who.may("designer") else "viewer")
                if has_model:
                    sha, size = tree_sha256(factories.models.artifacts.path(rel))
                    new = NewVersion(
                        project_id=p.id,
                        dataset_version_id=None,
                        method=str(manifest.get("method") or "bundle"),
                        base_encoder=p.base_encoder,
                        config=dict(manifest.get("config") or {}),
                        metrics=dict(manifest.get("metrics") or {}),
                        artifact_path=rel,
                        artifact_sha256=sha,
                        artifact_size=size,
                        note=f"from bundle: {json.dumps(manifest.get('model_version'))}",
                    )
                    versions.register_version(s, new, activate=True)
                opened = p.name
            security.record(factories.db, "bundle_opened", f"{opened!r} from {Path(path).name}")
            return opened
        except BaseException:
            if has_model:
                factories.models.artifacts.remove(rel)
            raise
    finally:
        contents.cleanup()
