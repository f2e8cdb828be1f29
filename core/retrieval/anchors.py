"""Intent names and descriptions as *anchors*: one vector per intent that joins the pool.

An intent's anchor is its description, or its humanised name when it has none (``card_arrival``
→ "card arrival"). With a weight ``w > 0`` (:meth:`core.retrieval.knn.KnnIndex.set_anchors`) the
anchor counts in the intent's prototype as ``w`` examples' worth (the prototype is the unit mean
of its examples' vectors plus ``w`` times the anchor's), and an intent with **no labelled
examples** is scored by its anchor alone (cold start: it predicts zero-shot). New labels still
count at once: the prototype is the same running sum, the anchor one more term in it. The
explanation says when an anchor decided (:mod:`core.retrieval.explain`).

The default weight, :data:`DEFAULT_ANCHOR_WEIGHT`, is what ``bench/descriptions.py`` picked
(BANKING77 and CLINC150, 1/5/10 shots, frozen MiniLM, 3 seeds); a project can change it.

Example:
    >>> humanise("card_arrival"), humanise("getExchangeRate"), humanise("top-up/failed")
    ('card arrival', 'get exchange rate', 'top up failed')
    >>> anchor_texts(["card_arrival", "refund"], {"refund": "Money back for an order"})
    {'card_arrival': 'card arrival', 'refund': 'Money back for an order'}
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

# The id of an anchor where an example's would be (``best`` of a cold-start intent).
ANCHOR_ID = -1
# The anchor's weight in its intent's prototype, in examples (0: anchors off).
DEFAULT_ANCHOR_WEIGHT = 1.0

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[_\-./+:]+")


def humanise(name: str) -> str:
    """An intent name as words: separators to spaces, camelCase split, lower-cased."""
    return " ".join(_SEPARATORS.sub(" ", _CAMEL.sub(" ", name)).lower().split())


def anchor_texts(
    names: Iterable[str], descriptions: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Each intent's anchor text: its description, else its humanised name (sorted by name)."""
    descriptions = descriptions or {}
    out: dict[str, str] = {}
    for name in sorted(set(names)):
        text = " ".join((descriptions.get(name) or "").split()) or humanise(name)
        if text:
            out[name] = text
    return out


def check_weight(weight: float | None) -> float:
    """A usable anchor weight: a finite number >= 0 (None: off)."""
    if weight is None:
        return 0.0
    value = float(weight)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"An anchor weight is a number of examples, 0 or more; got {weight!r}.")
    return value
