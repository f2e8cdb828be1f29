"""The portable model bundle: one zip that predicts without the app.

``write_bundle`` (:mod:`core.bundle.writer`) writes it; ``load`` (:mod:`core.bundle.reader`)
verifies it and returns the one :class:`~core.retrieval.predictor.Predictor`;
:mod:`core.bundle.safety` refuses hostile archives, :mod:`core.bundle.weights` weights that
would not load as the base architecture's; :mod:`core.bundle.onnx` adds an int8 encoder.
"""

from __future__ import annotations

from core.bundle.card import model_card
from core.bundle.layout import BUNDLE_FORMAT
from core.bundle.reader import BundleContents, BundlePredictor, load, open_bundle
from core.bundle.safety import BundleError
from core.bundle.writer import write_bundle

__all__ = [
    "BUNDLE_FORMAT",
    "BundleContents",
    "BundleError",
    "BundlePredictor",
    "load",
    "model_card",
    "open_bundle",
    "write_bundle",
]
