"""A model version as a bundle that answers exactly as the app serving that version.

A bundle is written from the app's own pool, not rebuilt beside it: the pool that serves (or,
for another precision or version, the pool the app would serve with it, built by the same code:
:meth:`app.serving.live.LivePools.pool_with`) gives the exemplars in its order, their vectors
in its encoder's space, its anchors, its calibrated thresholds, its rule, ``k`` and head; the
encoder travels as the pool encodes: the version's own int8 copy for an int8 bundle (the graph
the app serves, not a new export of it), else the fp32 weights with an ONNX graph over them.
Its ``predict.py`` decides with :mod:`core.portable`, the arithmetic the app computes with, so
its decisions are the app's (issue 66 item 5: a bundle calibrated its own thresholds with its
own fold ids, 0.6672 against the app's 0.6681, and an int8 bundle queried fp32 pool vectors;
991 and 994 of 1,000 BANKING77 answers agreed). The manifest says which precision and version
the app served when it was exported (``app_served``) and whether this bundle is that one.
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

from app.access import ProjectHandle
from app.services.models import retention, version_files
from app.services.models.versions import Version
from app.services.projects import accounts as security
from app.serving.factories import FactoryBuilder
from app.serving.live import LivePools
from app.serving.pools import ProjectPool
from core.bundle import write_bundle
from core.bundle.onnx_encoder import MODEL_FILE, OnnxEncoder
from core.bundle.onnx_shared import materialise
from core.encoding.anchor_encoder import anchor_encoder_of
from core.encoding.cache import CachedEncoder
from core.encoding.registry import Encoder
from core.evaluation.oos import in_scope_labels
from core.evaluation.version_metrics import VersionMetrics
from core.multilabel.head import HEAD_DIR
from core.training.model_io import full_artifact
from storage import datasets, versions
from storage.errors import NotFoundError
from storage.tables import ModelVersion

INT8, FP32 = "int8", "fp32"


def precision_of(encoder: object) -> str:
    """``"int8"`` for the app's ONNX encoders (its int8 copies), else ``"fp32"``."""
    if isinstance(encoder, OnnxEncoder):
        return str(encoder.config.get("precision") or INT8)
    return FP32


def version_row(factories: FactoryBuilder, p: ProjectHandle, version: Version) -> dict[str, Any]:
    """What the manifest says about the version (None/"active" = the active one; "base": the
    frozen base encoder); ``row`` is its :class:`ModelVersion` (None for the frozen base)."""
    with factories.db.session() as s:
        base = p.base_encoder
        if version == "base" or (version in (None, "active") and not p.active_version_id):
            return {"id": None, "method": "frozen", "base": base, "dir": None, "row": None}
        try:
            mv = (
                versions.active_version(s, p.id)
                if version in (None, "active")
                else versions.get_version(s, p.id, int(version))
            )
        except NotFoundError:
            raise ValueError(f"No model version {version} in project {p.name!r}.") from None
    assert mv is not None
    retention.require_files(mv, "exported")
    if not mv.artifact_path or not factories.models.artifacts.verify(
        mv.artifact_path, mv.artifact_sha256 or ""
    ):
        raise ValueError(f"The files of v{mv.id} are missing or changed on disk.")
    return {
        "id": mv.id,
        "method": mv.method,
        "base": mv.base_encoder,
        "dir": factories.models.artifacts.path(mv.artifact_path),
        "config": dict(mv.config or {}),
        "measured": VersionMetrics.from_dict(mv.metrics),
        "row": mv,
    }


def recorded(measured: VersionMetrics | None, variant: str | None) -> dict[str, Any]:
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


@dataclass
class _Encoder:
    """The encoder a bundle carries: what encodes its pool and queries, and its files."""

    encoder: CachedEncoder
    files: dict[str, Path]  # extra_files of write_bundle
    encoder_dir: Path | None  # the version's folder (its safetensors), or None
    onnx_only: bool = False
    variant: str | None = None  # the int8 recipe


def export_bundle(
    live: LivePools,
    p: ProjectHandle,
    out: str | Path,
    *,
    version: Version = None,
    int8: bool = False,
) -> dict[str, Any]:
    """Write ``out`` (.zip) for a version of the project and return its summary.

    The bundle is the pool the app serves the version with at that precision (see the module):
    with ``int8`` the version's int8 copy (a version without one passing parity, or the frozen
    base, gets one exported here, refused below 99 % top-1 agreement), else fp32 (the version's
    safetensors, or the frozen base's ONNX graph with its weights). Either way its
    ``predict.py`` runs without the app and answers as the app does with that encoder.

    Raises:
        ValueError: a path not ending in .zip, an unknown version, a project that encodes
            context, no labelled pool.
        core.bundle.onnx.OnnxParityError: a new int8 copy disagrees with fp32 on more than 1 %
            of the evaluation split; nothing is written.
    """
    out = Path(out)
    if out.suffix.lower() != ".zip":
        raise ValueError("A bundle is a .zip file: give a path ending in .zip.")
    if p.settings.encode_context:  # a bundle encodes the utterance alone: it would drift
        raise ValueError(
            "This project encodes each utterance after its context, and a bundle predicts from "
            "the utterance alone. Turn context encoding off to export a bundle "
            "(intent-studio context --encode off)."
        )
    row = version_row(live.factories, p, version)
    mv: ModelVersion | None = row["row"]
    served = live.settled(p.id)  # the app as it serves now
    dataset_hash, rows = datasets.current(live.db, p.id)
    pool_rows = [r for r in rows if r.split == "train" and in_scope_labels(r.labels)]
    if not pool_rows:
        raise ValueError("This project has no labelled training utterances to put in a bundle.")
    with tempfile.TemporaryDirectory(prefix="bundle-") as tmp:
        chosen = _encoder(live, row, int8, Path(tmp), pool_rows, rows)
        same = served.model_version_id == row["id"] and served.encoder is chosen.encoder
        pool = served if same else live.pool_with(p.id, mv, chosen.encoder)
        fields, data = _from_pool(pool)
        fields.update(
            project=p.name,
            model_version=row["id"],
            method=row["method"],
            config=row.get("config", {}),
            dataset_hash=dataset_hash,
            precision=INT8 if int8 else FP32,
            app_served={
                "precision": precision_of(served.encoder),
                "model_version": served.model_version_id,
                "this_bundle": same,
            },
            **recorded(row.get("measured"), chosen.variant if int8 else None),
        )
        if data.pop("head", None) is not None:
            chosen.files[HEAD_DIR] = pool.predictor.head.save(Path(tmp) / HEAD_DIR)  # type: ignore[union-attr]
        write_bundle(
            out,
            encoder_dir=chosen.encoder_dir,
            base_encoder=row["base"],
            manifest_fields=fields,
            extra_files=chosen.files,
            onnx_only=chosen.onnx_only,
            **data,
        )
    said = row["id"] or "frozen base"
    security.record(live.db, "bundle_exported", f"{p.name!r}, version {said}", who=p.actor)
    if row["id"] is not None:  # the retention rule keeps an exported version's files
        version_files.exported(live.db, p, row["id"])
    return {
        "path": str(out),
        "size_mb": round(out.stat().st_size / 1e6, 2),
        "model_version": row["id"],
        "exemplars": len(data["exemplar_texts"]),
        "int8": int8,
        "answers_as_served": same,
        "app_served": fields["app_served"]["precision"],
    }


def _from_pool(pool: ProjectPool) -> tuple[dict[str, Any], dict[str, Any]]:
    """What a bundle takes from a pool, read under its lock: manifest fields (rule, ``k``,
    multi-label, thresholds, calibration) and ``write_bundle``'s data (the exemplars in the
    pool's order with their vectors, the anchors, the head)."""
    with pool.lock:
        predictor = pool.predictor
        _, texts, labels, vectors = pool.index.examples()
        anchors, anchor_vectors = pool.index.anchor_vectors()
        fields: dict[str, Any] = {
            "rule": predictor.rule,
            "k": predictor.k,
            "multi_label": predictor.multi_label,
            "thresholds": dict(predictor.thresholds),
        }
        if pool.calibration is not None:
            fields["out_of_scope"] = pool.calibration.to_dict()
        data: dict[str, Any] = {
            "exemplar_texts": texts,
            "exemplar_labels": labels,
            "vectors": vectors,
            "anchors": anchors,
            "anchor_vectors": anchor_vectors if anchors else None,
            "anchor_weight": pool.index.anchor_weight if anchors else 0.0,
            "head": predictor.head,
        }
    return fields, data


def _encoder(
    live: LivePools,
    row: dict[str, Any],
    int8: bool,
    tmp: Path,
    pool_rows: list[Any],
    rows: list[Any],
) -> _Encoder:
    """The encoder a bundle of the version carries (see :func:`export_bundle`)."""
    mv: ModelVersion | None = row["row"]
    fp32 = live.models.encoder_for_version(mv, row["base"])
    if not int8:  # a version that stores only its tuned layers travels whole
        folder = None if row["dir"] is None else full_artifact(row["dir"], tmp / "full")
        return _Encoder(cast(CachedEncoder, fp32), _fp32_graph(fp32, folder, tmp), folder)
    onnx_only = row["dir"] is not None  # a tuned version's fp32 weights stay home
    copy = live.models.int8_copy(mv)
    if copy is not None:  # the copy the app serves (or would, on a CPU with int8 on), whole
        whole = materialise(copy.folder, tmp / "onnx-whole")
        return _Encoder(copy, {"onnx": whole}, None, onnx_only, copy.config.get("variant"))
    from core.bundle.onnx import export_onnx

    texts = [r.text for r in pool_rows]
    exported = export_onnx(
        fp32,
        tmp / "onnx",
        pool_texts=texts,
        pool_labels=[in_scope_labels(r.labels) for r in pool_rows],
        eval_texts=[r.text for r in rows if r.split == "test"] or texts,
        own_pool=True,  # the pool in the int8 space, as the app serves an int8 copy
    )
    made = OnnxEncoder(exported.folder, allow_spinning=False)
    digest = hashlib.sha256((exported.folder / MODEL_FILE).read_bytes()).hexdigest()
    made.fingerprint += f"-{digest[:16]}"  # its own cache entries: a new export, a new graph
    if (by := anchor_encoder_of(fp32)) is not fp32:  # an old version's separate label encoder
        made.anchors = cast(Encoder, by)
    return _Encoder(made, {"onnx": exported.folder}, None, onnx_only, exported.variant)


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


__all__ = ["export_bundle", "precision_of", "recorded", "version_row"]
