"""Plotly figures built from plain data (lists, arrays, dicts): maps, F1 bars, confusion heatmaps.

Pure functions: no database, no Gradio. Every point of a map carries its utterance id in
``customdata`` so a UI can turn a click or a lasso selection back into ids, and every confusion
cell carries ``(gold, predicted)``. Each intent has one colour (:func:`intent_colours`: the
project's sorted intent names over colorcet's glasbey palette, distinct for up to 256 intents).

All user text placed in hover labels is HTML-escaped (plotly renders a subset of HTML there).

Example:
    >>> fig = scatter_map([[0, 0], [1, 1]], [7, 8], ["hi", "bye"], ["greet", None],
    ...                   ["greet", "bye"], ["train", "unlabelled"])
    >>> sorted(int(i) for t in fig.data for i in t.customdata)
    [7, 8]
"""

from __future__ import annotations

from app.plots.common import HIGHLIGHTS, MapData, format_metrics, intent_colours
from app.plots.evaluation import (
    confused_pairs,
    confusion_heatmap,
    f1_bars,
    most_confused,
    worst_pairs,
)
from app.plots.maps import highlight_mask, scatter_map, side_by_side
from app.plots.maps import warm_up as warm_up_figures

__all__ = [
    "HIGHLIGHTS",
    "MapData",
    "confused_pairs",
    "confusion_heatmap",
    "f1_bars",
    "format_metrics",
    "highlight_mask",
    "intent_colours",
    "most_confused",
    "scatter_map",
    "side_by_side",
    "warm_up_figures",
    "worst_pairs",
]
