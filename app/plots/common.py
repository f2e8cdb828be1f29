"""What every figure shares: one colour per intent, point symbols, hover text, MapData."""

from __future__ import annotations

import html
import logging
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import colorcet
import numpy as np

logger = logging.getLogger(__name__)

Highlight = Literal["misclassified", "low_margin", "unlabelled"]
HIGHLIGHTS: tuple[str, ...] = ("misclassified", "low_margin", "unlabelled")
# Glasbey: 256 colours chosen to be as far apart as possible for the eye, readable on white.
PALETTE: tuple[str, ...] = tuple(colorcet.glasbey_dark)
UNLABELLED_COLOUR = "#b0b0b0"
OUT_OF_FOCUS_COLOUR = "#d9d9d9"
UNLABELLED = "(unlabelled)"
SPLIT_SYMBOLS: dict[str, str] = {"train": "circle", "test": "diamond", "unlabelled": "x"}
OTHER_SYMBOL = "square"
LOW_MARGIN = 0.05
# Above this many points maps use WebGL (scattergl); SVG stays crisp and testable below it.
WEBGL_FROM = 3000
_DIM_OPACITY = 0.12

GoldLabel = str | Sequence[str] | None


def intent_colours(intents: Sequence[str]) -> dict[str, str]:
    """One colour per intent, all different for up to 256 intents (beyond, the palette repeats).

    Colours follow the sorted names, so every view of a project's intents colours an intent the
    same way (the maps, the evaluation), and two projects with the same intents match.

    Example:
        >>> colours = intent_colours(["b", "a", UNLABELLED])
        >>> colours["a"] == PALETTE[0], colours["b"] == PALETTE[1], colours[UNLABELLED]
        (True, True, '#b0b0b0')
    """
    names = sorted({i for i in intents if i and i != UNLABELLED})
    out = {name: PALETTE[k % len(PALETTE)] for k, name in enumerate(names)}
    out[UNLABELLED] = UNLABELLED_COLOUR
    return out


def plain(text: object) -> str:
    """``text`` as Plotly shows it as text (issue 56, row 3): Plotly reads the labels it draws
    (legend entries, axis ticks, annotations, hover) as a subset of HTML, so an intent named
    ``<a href=...>`` would be a link and ``<span style=...>`` styled text. Escaped, it shows as
    typed. Values a click reads back (``customdata``) stay as they are.

    Example:
        >>> plain('<a href="https://evil.example">x</a> & y')
        '&lt;a href="https://evil.example"&gt;x&lt;/a&gt; &amp; y'
    """
    return html.escape(str(text), quote=False)


def _gold_tuple(label: GoldLabel) -> tuple[str, ...]:
    if label is None:
        return ()
    if isinstance(label, str):
        return (label,) if label else ()
    return tuple(str(x) for x in label if x)


def _wrap(text: str, width: int = 60, max_lines: int = 4) -> str:
    lines = textwrap.wrap(" ".join(str(text).split()), width) or [""]
    if len(lines) > max_lines:
        lines = [*lines[:max_lines], "…"]
    return "<br>".join(html.escape(line) for line in lines)


@dataclass
class MapData:
    """One 2D map of utterances, as plain data (what :func:`scatter_map` draws)."""

    points: np.ndarray | Sequence[Sequence[float]]
    ids: Sequence[int]
    texts: Sequence[str]
    gold: Sequence[GoldLabel]
    predicted: Sequence[str | None]
    splits: Sequence[str]
    margins: Sequence[float] | None = None
    meta: dict[str, Any] = field(default_factory=dict)


def format_metrics(metrics: Mapping[str, float] | None) -> str:
    """``silhouette 0.07 · alignment 0.85 · uniformity -1.90`` (missing/NaN metrics left out).

    Example:
        >>> format_metrics({"silhouette": 0.5, "uniformity": -2.0})
        'silhouette 0.50 · uniformity -2.00'
    """
    if not metrics:
        return ""
    parts = []
    for key in ("silhouette", "alignment", "uniformity"):
        value = metrics.get(key)
        if value is not None and np.isfinite(value):
            parts.append(f"{key} {float(value):.2f}")
    return " · ".join(parts)
