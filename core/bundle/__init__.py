"""The portable model bundle: one zip that predicts without the app."""

from __future__ import annotations

from core.bundle.reader import Predictor, load, open_bundle, write_bundle
from core.bundle.safety import BundleError

__all__ = ["BundleError", "Predictor", "load", "open_bundle", "write_bundle"]
