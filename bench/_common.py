"""What many benches share besides the checkouts they drive (:mod:`bench._checkouts`)."""

from __future__ import annotations

import os


def offline_models() -> None:
    """Load models from the local cache only, with tokenizers single-threaded: set before the
    libraries are imported, and left as they are where the caller has set them."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
