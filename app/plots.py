"""Plotly figures built from plain data (lists, arrays, dicts): maps, F1 bars, confusion heatmaps.

Pure functions: no database, no Gradio. Every point of a map carries its utterance id in
``customdata`` so a UI can turn a click or a lasso selection back into ids, and every confusion
cell carries ``(gold, predicted)``. Each intent has one colour everywhere (a hash of its name
into a fixed palette), so the same intent looks the same in every view and every session.

All user text placed in hover labels is HTML-escaped (plotly renders a subset of HTML there).

Example:
    >>> fig = scatter_map([[0, 0], [1, 1]], [7, 8], ["hi", "bye"], ["greet", None],
    ...                   ["greet", "bye"], ["train", "unlabelled"])
    >>> sorted(int(i) for t in fig.data for i in t.customdata)
    [7, 8]
"""

from __future__ import annotations

import hashlib
import html
import logging
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from core.projection import align_transform

logger = logging.getLogger(__name__)

Highlight = Literal["misclassified", "low_margin", "unlabelled"]
HIGHLIGHTS: tuple[str, ...] = ("misclassified", "low_margin", "unlabelled")
PALETTE: tuple[str, ...] = (
    *qualitative.Dark24,
    *qualitative.Alphabet,
    *qualitative.Light24,
)
UNLABELLED_COLOUR = "#b0b0b0"
UNLABELLED = "(unlabelled)"
SPLIT_SYMBOLS: dict[str, str] = {"train": "circle", "test": "diamond", "unlabelled": "x"}
OTHER_SYMBOL = "square"
LOW_MARGIN = 0.05
# Above this many points maps use WebGL (scattergl); SVG stays crisp and testable below it.
WEBGL_FROM = 3000
_DIM_OPACITY = 0.12

GoldLabel = str | Sequence[str] | None


def intent_colour(intent: str | None) -> str:
    """The colour of an intent: the same name gives the same colour in every view and process.

    Example:
        >>> intent_colour("card_arrival") == intent_colour("card_arrival")
        True
    """
    if not intent or intent == UNLABELLED:
        return UNLABELLED_COLOUR
    digest = hashlib.sha1(intent.encode("utf-8")).digest()
    return PALETTE[int.from_bytes(digest[:4], "big") % len(PALETTE)]


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


def highlight_mask(
    gold: Sequence[GoldLabel],
    predicted: Sequence[str | None],
    highlight: str | None,
    *,
    margins: Sequence[float] | None = None,
    low_margin: float = LOW_MARGIN,
) -> np.ndarray:
    """Boolean mask of the points a highlight mode selects (all ``True`` for ``None``).

    ``misclassified``: labelled points whose prediction is not among their gold intents;
    ``low_margin``: margin to the runner-up below ``low_margin``; ``unlabelled``: no gold intent.

    Example:
        >>> highlight_mask(["a", "b", None], ["a", "a", "b"], "misclassified").tolist()
        [False, True, False]
    """
    n = len(gold)
    if highlight is None or highlight == "none":
        return np.ones(n, dtype=bool)
    if highlight not in HIGHLIGHTS:
        raise ValueError(f"Unknown highlight {highlight!r}: use one of {', '.join(HIGHLIGHTS)}")
    golds = [_gold_tuple(g) for g in gold]
    if highlight == "unlabelled":
        return np.array([not g for g in golds], dtype=bool)
    if highlight == "misclassified":
        return np.array(
            [
                bool(g) and p is not None and p not in g
                for g, p in zip(golds, predicted, strict=True)
            ],
            dtype=bool,
        )
    if margins is None:
        raise ValueError("highlight='low_margin' needs margins")
    return np.array([float(m) < low_margin for m in margins], dtype=bool)


def _check_lengths(n: int, **columns: Sequence[Any] | None) -> None:
    for name, col in columns.items():
        if col is not None and len(col) != n:
            raise ValueError(f"{name} has {len(col)} entries, expected {n} (one per point)")


def _map_traces(
    m: MapData,
    *,
    highlight: str | None,
    low_margin: float,
    colour_by: str,
    webgl: bool | None,
    legend: bool,
) -> tuple[list[go.Scatter | go.Scattergl], int]:
    pts = np.asarray(m.points, dtype=np.float64).reshape(-1, 2) if len(m.ids) else np.zeros((0, 2))
    n = len(pts)
    _check_lengths(
        n,
        ids=m.ids,
        texts=m.texts,
        gold=m.gold,
        predicted=m.predicted,
        splits=m.splits,
        margins=m.margins,
    )
    if colour_by not in ("gold", "predicted"):
        raise ValueError("colour_by must be 'gold' or 'predicted'")
    mask = highlight_mask(m.gold, m.predicted, highlight, margins=m.margins, low_margin=low_margin)
    golds = [_gold_tuple(g) for g in m.gold]
    keys = [
        (g[0] if g else UNLABELLED) if colour_by == "gold" else (p or UNLABELLED)
        for g, p in zip(golds, m.predicted, strict=True)
    ]
    use_gl = n > WEBGL_FROM if webgl is None else webgl
    cls = go.Scattergl if use_gl else go.Scatter
    groups: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    order = sorted(k for k in groups if k != UNLABELLED)
    if UNLABELLED in groups:
        order.append(UNLABELLED)
    traces: list[go.Scatter | go.Scattergl] = []
    for key in order:
        idx = groups[key]
        hover = []
        for i in idx:
            parts = [
                f"<b>{_wrap(m.texts[i])}</b>",
                f"gold: {html.escape(', '.join(golds[i]) or '—')}",
                f"predicted: {html.escape(m.predicted[i] or '—')}",
            ]
            if m.margins is not None:
                parts.append(f"margin: {float(m.margins[i]):.3f}")
            parts.append(f"split: {html.escape(str(m.splits[i]))} · id {int(m.ids[i])}")
            hover.append("<br>".join(parts))
        lit = mask[idx]
        traces.append(
            cls(
                x=pts[idx, 0].tolist(),
                y=pts[idx, 1].tolist(),
                mode="markers",
                name=key,
                legendgroup=key,
                showlegend=legend,
                customdata=[int(m.ids[i]) for i in idx],
                hovertext=hover,
                hovertemplate="%{hovertext}<extra></extra>",
                marker={
                    "color": intent_colour(key),
                    "symbol": [SPLIT_SYMBOLS.get(str(m.splits[i]), OTHER_SYMBOL) for i in idx],
                    "size": [9 if (h and highlight) else 7 for h in lit],
                    "opacity": [0.95 if h else _DIM_OPACITY for h in lit],
                    "line": {"width": 0},
                },
            )
        )
    return traces, int(mask.sum())


def scatter_map(
    points_2d: np.ndarray | Sequence[Sequence[float]],
    ids: Sequence[int],
    texts: Sequence[str],
    gold: Sequence[GoldLabel],
    predicted: Sequence[str | None],
    splits: Sequence[str],
    *,
    highlight: str | None = None,
    margins: Sequence[float] | None = None,
    low_margin: float = LOW_MARGIN,
    colour_by: str = "gold",
    title: str | None = None,
    webgl: bool | None = None,
) -> go.Figure:
    """A 2D map of utterances: colour by intent, marker by split, hover with text and intents.

    Args:
        points_2d: ``(n, 2)`` coordinates (from :func:`core.projection.project`).
        ids: utterance ids, put in each point's ``customdata``.
        texts: utterance texts (escaped for the hover label).
        gold: gold intent per point: a name, several names (coloured by the first) or ``None``.
        predicted: predicted intent per point (or ``None``).
        splits: ``"train"`` (circle), ``"test"`` (diamond), ``"unlabelled"`` (x); others: square.
        highlight: ``None``, ``"misclassified"``, ``"low_margin"`` or ``"unlabelled"``: those
            points stay bright and larger, all others are dimmed.
        margins: margin to the runner-up per point (needed for ``"low_margin"``, shown on hover).
        low_margin: the margin below which a point counts as low-margin.
        colour_by: ``"gold"`` (unlabelled points grey) or ``"predicted"``.
        title: figure title.
        webgl: force ``scattergl`` (True) or SVG ``scatter`` (False); default by size.

    Returns:
        A figure with one trace per intent (sorted by name, unlabelled last);
        ``layout.meta`` holds ``n_points`` and ``n_highlighted``.

    Example:
        >>> fig = scatter_map([[0, 0]], [1], ["hi"], [None], [None], ["unlabelled"])
        >>> fig.layout.meta["n_points"]
        1
    """
    m = MapData(points_2d, ids, texts, gold, predicted, splits, margins)
    traces, lit = _map_traces(
        m, highlight=highlight, low_margin=low_margin, colour_by=colour_by, webgl=webgl, legend=True
    )
    fig = go.Figure(data=traces)
    fig.update_layout(
        title=title,
        dragmode="lasso",
        hovermode="closest",
        clickmode="event+select",
        legend={"itemsizing": "constant", "title": {"text": "intent"}},
        margin={"l": 10, "r": 10, "t": 50 if title else 20, "b": 10},
        meta={"n_points": len(ids), "n_highlighted": lit, "highlight": highlight},
        template="plotly_white",
    )
    fig.update_xaxes(showticklabels=False, zeroline=False, showgrid=False)
    fig.update_yaxes(showticklabels=False, zeroline=False, showgrid=False)
    return fig


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


def side_by_side(
    map_a: MapData,
    map_b: MapData,
    titles: tuple[str, str] | Sequence[str],
    metrics_a: Mapping[str, float] | None = None,
    metrics_b: Mapping[str, float] | None = None,
    *,
    highlight: str | None = None,
    low_margin: float = LOW_MARGIN,
    align_b: bool = True,
    webgl: bool | None = None,
) -> go.Figure:
    """Two maps of the same utterances next to each other (e.g. frozen encoder vs active model).

    The right map is rotated/scaled onto the left one over their common ids (Procrustes, see
    :func:`core.projection.align`) so a point sits in a comparable place in both. Each intent has
    one legend entry controlling both panels; points carry their ids in ``customdata`` in both.

    Args:
        map_a: the left map ("before").
        map_b: the right map ("after").
        titles: the two panel titles.
        metrics_a: space metrics of the left space, shown under its title.
        metrics_b: space metrics of the right space.
        highlight: as in :func:`scatter_map`, applied to both panels.
        low_margin: as in :func:`scatter_map`.
        align_b: align the right map onto the left one.
        webgl: as in :func:`scatter_map`.

    Returns:
        A two-panel figure.

    Example:
        >>> a = MapData([[0, 0], [1, 0]], [1, 2], ["x", "y"], ["p", "q"], ["p", "q"], ["train"] * 2)
        >>> len(side_by_side(a, a, ("before", "after")).data)
        4
    """
    if len(titles) != 2:
        raise ValueError("titles must hold two strings")
    if align_b:
        map_b = _aligned(map_a, map_b)
    subtitles = []
    for title, metrics in ((titles[0], metrics_a), (titles[1], metrics_b)):
        line = format_metrics(metrics)
        subtitles.append(
            f"<b>{html.escape(title)}</b>" + (f"<br><sub>{html.escape(line)}</sub>" if line else "")
        )
    fig = make_subplots(rows=1, cols=2, subplot_titles=subtitles, horizontal_spacing=0.04)
    seen: set[str] = set()
    for col, m in ((1, map_a), (2, map_b)):
        traces, _ = _map_traces(
            m,
            highlight=highlight,
            low_margin=low_margin,
            colour_by="gold",
            webgl=webgl,
            legend=True,
        )
        for tr in traces:
            tr.showlegend = tr.name not in seen
            seen.add(str(tr.name))
            fig.add_trace(tr, row=1, col=col)
    fig.update_layout(
        dragmode="lasso",
        hovermode="closest",
        clickmode="event+select",
        legend={"itemsizing": "constant", "title": {"text": "intent"}},
        margin={"l": 10, "r": 10, "t": 70, "b": 10},
        meta={"n_points": [len(map_a.ids), len(map_b.ids)], "highlight": highlight},
        template="plotly_white",
    )
    fig.update_xaxes(showticklabels=False, zeroline=False, showgrid=False)
    fig.update_yaxes(showticklabels=False, zeroline=False, showgrid=False)
    return fig


def _aligned(ref: MapData, other: MapData) -> MapData:
    ref_pts = np.asarray(ref.points, dtype=np.float32).reshape(-1, 2)
    oth_pts = np.asarray(other.points, dtype=np.float32).reshape(-1, 2)
    pos = {int(i): k for k, i in enumerate(ref.ids)}
    pairs = [(pos[int(i)], k) for k, i in enumerate(other.ids) if int(i) in pos]
    if len(pairs) < 3:
        return other
    ri = np.array([r for r, _ in pairs], dtype=np.int64)
    oi = np.array([o for _, o in pairs], dtype=np.int64)
    # Fit on the common points, then move every point of `other`.
    matrix, offset = align_transform(ref_pts[ri], oth_pts[oi])
    moved = oth_pts.astype(np.float64) @ matrix + offset
    return MapData(
        moved.astype(np.float32),
        other.ids,
        other.texts,
        other.gold,
        other.predicted,
        other.splits,
        other.margins,
        dict(other.meta),
    )


def f1_bars(per_intent: Mapping[str, float], *, title: str | None = None) -> go.Figure:
    """Horizontal per-intent F1 bars, worst intent on top, in each intent's colour.

    Example:
        >>> list(f1_bars({"a": 0.9, "b": 0.4}).data[0].y)
        ['b', 'a']
    """
    items = sorted(per_intent.items(), key=lambda kv: (float(kv[1]), kv[0]))
    names = [k for k, _ in items]
    values = [float(v) for _, v in items]
    fig = go.Figure(
        go.Bar(
            x=values,
            y=names,
            orientation="h",
            marker={"color": [intent_colour(k) for k in names]},
            customdata=names,
            text=[f"{v:.2f}" for v in values],
            textposition="outside",
            hovertemplate="%{y}: F1 %{x:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        title=title,
        xaxis={"range": [0, 1.08], "title": {"text": "F1"}},
        yaxis={"autorange": "reversed", "automargin": True},
        height=max(300, 60 + 18 * len(names)),
        margin={"l": 10, "r": 10, "t": 50 if title else 20, "b": 40},
        template="plotly_white",
        showlegend=False,
    )
    return fig


def _square(labels: Sequence[str], matrix: np.ndarray | Sequence[Sequence[float]]) -> np.ndarray:
    z = np.asarray(matrix, dtype=np.float64)
    n = len(labels)
    if z.shape != (n, n):
        raise ValueError(f"matrix must be {n}x{n} (gold rows, predicted columns), got {z.shape}")
    return z


def confusion_heatmap(
    labels: Sequence[str],
    matrix: np.ndarray | Sequence[Sequence[float]],
    *,
    title: str | None = None,
) -> go.Figure:
    """Confusion-matrix heatmap: gold intents as rows, predicted as columns.

    Each cell's ``customdata`` is ``[gold, predicted]`` so a click tells which utterances to show.

    Example:
        >>> fig = confusion_heatmap(["a", "b"], [[3, 1], [0, 4]])
        >>> list(fig.data[0].customdata[0][1])
        ['a', 'b']
    """
    z = _square(labels, matrix)
    names = [str(x) for x in labels]
    custom = [[[g, p] for p in names] for g in names]
    integer = bool(np.all(np.equal(np.mod(z, 1), 0)))
    fig = go.Figure(
        go.Heatmap(
            z=z.tolist(),
            x=names,
            y=names,
            customdata=custom,
            colorscale="Blues",
            hovertemplate=(
                "gold: %{customdata[0]}<br>predicted: %{customdata[1]}<br>"
                + ("count: %{z:d}" if integer else "value: %{z:.3f}")
                + "<extra></extra>"
            ),
            hoverongaps=False,
        )
    )
    size = max(400, min(1400, 120 + 14 * len(names)))
    fig.update_layout(
        title=title,
        xaxis={"title": {"text": "predicted"}, "tickangle": -60, "automargin": True},
        yaxis={"title": {"text": "gold"}, "autorange": "reversed", "automargin": True},
        width=None,
        height=size,
        margin={"l": 10, "r": 10, "t": 50 if title else 20, "b": 10},
        template="plotly_white",
    )
    return fig


def worst_pairs(
    labels: Sequence[str], matrix: np.ndarray | Sequence[Sequence[float]], top: int = 10
) -> list[tuple[str, str, int]]:
    """The most frequent confusions ``(gold, predicted, count)``, off-diagonal and non-zero.

    Example:
        >>> worst_pairs(["a", "b", "c"], [[5, 2, 0], [3, 4, 0], [0, 1, 6]], top=2)
        [('b', 'a', 3), ('a', 'b', 2)]
    """
    z = _square(labels, matrix)
    cells = [
        (str(labels[i]), str(labels[j]), round(float(z[i, j])))
        for i in range(len(labels))
        for j in range(len(labels))
        if i != j and z[i, j] > 0
    ]
    cells.sort(key=lambda c: (-c[2], c[0], c[1]))
    return cells[: max(0, top)]
