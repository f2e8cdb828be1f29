"""The int8 serving rule (issue 46): a version serves its int8 ONNX copy (``onnx/`` in its
artifact, written by :func:`app.services.int8.export_version_int8`) when that copy passed parity
and the project's ``serve_int8`` setting is not off (on by default), else the fp32 encoder. Either
way one encoder encodes both the queries and the pool, and a version records the measurement of
the encoder that serves it (:func:`served_metrics`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.project_settings import ProjectSettings
from core.evaluation.version_metrics import VersionMetrics

if TYPE_CHECKING:
    from core.bundle.onnx_encoder import OnnxEncoder

INT8_DIR = "onnx"  # the int8 copy's folder in a version's artifact


def load_int8(folder: Path) -> OnnxEncoder:
    """The int8 ONNX encoder of a version's ``onnx/`` folder, as the live pool serves it (one
    of the server's shared encoder turns, no spinning threads)."""
    from core.bundle.onnx_encoder import OnnxEncoder
    from core.encoding.fair_share import SHARED

    return OnnxEncoder(folder, allow_spinning=False, turns=SHARED)


def serve_int8_setting(settings: dict[str, Any] | None) -> bool:
    """The project's choice (on unless set to false)."""
    return ProjectSettings.from_dict(settings).serve_int8


def serves_int8(metrics: VersionMetrics, settings: dict[str, Any] | None) -> bool:
    """The live rule: int8 when the version's export passed parity and the project allows it."""
    return metrics.int8_passed and serve_int8_setting(settings)


def served_metrics(metrics: VersionMetrics, settings: dict[str, Any] | None) -> VersionMetrics:
    """The version's recorded measurement of the encoder that serves it under the project's
    ``settings`` (:meth:`VersionMetrics.served`): what the history, the compare view, a bundle's
    manifest and the gate show."""
    return metrics.served(serves_int8(metrics, settings))


def serving_line(metrics: VersionMetrics, settings: dict[str, Any] | None) -> str:
    """One short line for the UI: which encoder serves predictions, and why."""
    info = metrics.int8
    if serves_int8(metrics, settings):
        return f"Serving: int8 ONNX encoder ({info.get('reason', 'parity passed')})."
    if metrics.int8_passed:
        return "Serving: fp32 encoder (int8 passed parity but is turned off for this project)."
    if info:
        return f"Serving: fp32 encoder (int8 not used: {info.get('reason', 'failed parity')})."
    return "Serving: fp32 encoder (this version has no int8 copy)."
