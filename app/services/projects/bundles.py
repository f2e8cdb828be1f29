"""Model bundles from the app's side: export a model version of a project as a bundle that
answers as the app serving it (:mod:`app.services.projects.bundle_export`), and import a bundle
as a new read-only project whose exemplars are its labelled pool and whose encoder is the
bundle's.

The bundle format and its safe loading live in :mod:`core.bundle`; this module only gathers the
project's data and writes rows.
"""

from __future__ import annotations

import itertools
import json
import logging
import shutil
import uuid
from pathlib import Path
from typing import Any

from app.access.auth import current_actor
from app.limits import BUNDLE_PROJECTS_PER_USER as BUNDLES
from app.project_settings import ANCHOR_SETTING, OOS_SETTING, ProjectSettings
from app.services.projects import accounts as security
from app.services.projects.bundle_export import export_bundle
from app.serving.factories import FactoryBuilder
from core.bundle import open_bundle
from core.encoding.registry import LABEL_DIR
from core.multilabel.head import HEAD_DIR
from core.retrieval.anchors import humanise
from storage import versions
from storage.artifacts import tree_sha256
from storage.errors import StorageError
from storage.imports import import_rows
from storage.members import read_only_memberships, set_member
from storage.names import project_name_problem
from storage.projects import create_project, describe_intents, names_starting
from storage.utterances import NewUtterance
from storage.versions import NewVersion

logger = logging.getLogger(__name__)

__all__ = ["export_bundle", "import_bundle"]


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
