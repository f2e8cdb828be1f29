"""Names fixed by the bundle format (read by the writer, the reader, the model card and the
bundle's own ``predict.py``, which carries this file)."""

from __future__ import annotations

BUNDLE_FORMAT = 1
MANIFEST = "manifest.json"
# The standalone predictor at a bundle's root (core.bundle.standalone): for its user to run;
# nothing in the app runs or imports it.
PREDICT_PY = "predict.py"
