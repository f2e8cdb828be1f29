"""The int8 serving rule (issues 46 and 55): a version serves its int8 ONNX copy when that copy
passed parity, the project's ``serve_int8`` setting is not off (on by default) and the process
serves on a CPU (:attr:`app.serving.compute.ComputeBudget.serves_int8`: a GPU serves fp32), else the
fp32 encoder. Either way one encoder encodes both the queries and the pool, and a version shows
the measurement of the encoder that serves it (:func:`served_metrics`).

The copy is its own artifact (``int8["artifact"]`` in the version's metrics, written by the
retrain's int8 phase after the version already serves fp32, :mod:`app.services.training.retrain_int8`);
a version registered before issue 55 keeps it in its own artifact's ``onnx/`` folder
(:func:`int8_folder` finds either). A project that was never retrained serves the base
encoder's int8 copy by the same rule (:func:`base_int8_rel`: built once per base encoder, its
parity checked like a version's, :mod:`app.services.training.base_int8`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.project_settings import ProjectSettings
from app.serving.compute import ComputeBudget, process_budget
from core.evaluation.version_metrics import VersionMetrics

if TYPE_CHECKING:
    from core.bundle.onnx_encoder import OnnxEncoder
    from storage.artifacts import ArtifactStore

INT8_DIR = "onnx"  # the int8 copy's folder in an artifact of a version before issue 55
# What the base encoder's int8 copy recorded of its parity check (beside its ``onnx/``).
BASE_RECORD = "int8.json"


def base_int8_rel(base: str) -> str:
    """Where the int8 copy of the base encoder ``base`` lives in the artifact store (issue 63
    item 5): one per base encoder's weights, shared by every project on it that has not been
    retrained (``base/minilm@<fingerprint>``)."""
    from core.encoding.registry import base_fingerprint

    return f"base/{base_fingerprint(base)}"


def base_int8_record(artifacts: ArtifactStore, base: str) -> dict[str, Any] | None:
    """What the base encoder's int8 copy recorded (``passed``, agreement, reason), None while
    there is none (not built yet)."""
    import json

    try:
        path = artifacts.path(base_int8_rel(base)) / BASE_RECORD
        return dict(json.loads(path.read_text("utf-8")))
    except (OSError, ValueError):
        return None


def load_int8(folder: Path) -> OnnxEncoder:
    """The int8 ONNX encoder of a version's ``onnx/`` folder, as the live pool serves it (one
    of the server's shared encoder turns, no spinning threads)."""
    from core.bundle.onnx_encoder import OnnxEncoder
    from core.bundle.onnx_shared import model_bytes
    from core.encoding.fair_share import SHARED, ChunkCost

    return OnnxEncoder(
        folder, allow_spinning=False, turns=SHARED, model=model_bytes(folder), costs=ChunkCost()
    )


def serves_int8(
    metrics: VersionMetrics,
    settings: ProjectSettings,
    budget: ComputeBudget | None = None,
) -> bool:
    """The live rule: int8 when the version's copy passed parity, the project allows it and
    the process serves on a CPU (``budget``: the process's own by default; asked only for a
    version whose copy passed)."""
    if not metrics.int8_passed or not settings.serve_int8:
        return False
    return (budget or process_budget()).serves_int8


def serves_base_int8(
    record: dict[str, Any] | None,
    settings: ProjectSettings,
    budget: ComputeBudget | None = None,
) -> bool:
    """The live rule for a project never retrained: its base encoder's int8 copy (``record``:
    :func:`base_int8_record`) when that copy passed parity, the project allows int8 and the
    process serves on a CPU, as :func:`serves_int8` for a version."""
    if not (record and record.get("passed")) or not settings.serve_int8:
        return False
    return (budget or process_budget()).serves_int8


def builds_int8(deployment: bool, budget: ComputeBudget | None = None) -> bool:
    """The build rule: a retrain's version (and a never-retrained project's base encoder) gets
    an int8 copy where the deployment allows int8 (``INTENT_STUDIO_INT8``: ``deployment``) and
    the device's budget builds one (a CPU, where it would serve)."""
    return deployment and (budget or process_budget()).int8_copy


def served_metrics(
    metrics: VersionMetrics,
    settings: ProjectSettings,
    budget: ComputeBudget | None = None,
) -> VersionMetrics:
    """The version's recorded measurement of the encoder that serves it under the project's
    ``settings`` on this process's device (:meth:`VersionMetrics.served`): what the history, the
    compare view, a bundle's manifest and the gate show."""
    return metrics.served(serves_int8(metrics, settings, budget))


def int8_folder(artifacts: ArtifactStore, artifact_path: str, metrics: VersionMetrics) -> Path:
    """The folder of a version's int8 copy: ``onnx/`` in its own artifact (``int8["artifact"]``),
    or in the version's artifact (a version registered before issue 55)."""
    own = metrics.int8.get("artifact")
    return artifacts.path(own if isinstance(own, str) and own else artifact_path) / INT8_DIR


def serving_line(
    metrics: VersionMetrics,
    settings: ProjectSettings,
    budget: ComputeBudget | None = None,
) -> str:
    """One short line for the UI: which encoder serves predictions, and why."""
    info = metrics.int8
    if serves_int8(metrics, settings, budget):
        return f"Serving: int8 ONNX encoder ({info.get('reason', 'parity passed')})."
    if metrics.int8_passed and not settings.serve_int8:
        return "Serving: fp32 encoder (int8 passed parity but is turned off for this project)."
    if metrics.int8_passed:
        return "Serving: fp32 encoder on the GPU (its int8 copy serves only on a CPU)."
    if info.get("pending"):
        return "Serving: fp32 encoder (its int8 copy is being built and checked)."
    if info:
        return f"Serving: fp32 encoder (int8 not used: {info.get('reason', 'failed parity')})."
    return "Serving: fp32 encoder (this version has no int8 copy)."
