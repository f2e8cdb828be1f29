"""Names fixed by the bundle format (read by the writer, the reader and the model card)."""

from __future__ import annotations

BUNDLE_FORMAT = 1
MANIFEST = "manifest.json"
ONNX_MODEL = "onnx/model.int8.onnx"
# A separate (non-siamese) label encoder's folder, in artifacts of versions trained before that
# option left TrainConfig (core.training.model_io reads it; nothing writes it any more)
# and in a bundle alike.
LABEL_DIR = "label_encoder"
