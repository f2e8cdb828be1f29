"""Names fixed by the bundle format (read by the writer, the reader and the model card)."""

from __future__ import annotations

BUNDLE_FORMAT = 1
MANIFEST = "manifest.json"
ONNX_MODEL = "onnx/model.int8.onnx"
