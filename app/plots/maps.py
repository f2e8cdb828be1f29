"""2D maps of utterances: one scatter, or two encoders side by side on aligned axes."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.plots.common import (
    _DIM_OPACITY,
    HIGHLIGHTS,
    LOW_MARGIN,
    OTHER_SYMBOL,
    OUT_OF_FOCUS_COLOUR,
    SPLIT_SYMBOLS,
    UNLABELLED,
    WEBGL_FROM,
    GoldLabel,
    MapData,
    _gold_tuple,
    _wrap,
    format_metrics,
    intent_colours,
    plain,
)
from app.plots.labels import LEGEND_PX, PANEL_PX, PLOT_PX, map_names, plot_area, ranges
from core.projection import align_transform

# A legend of more intents than this scrolls out of sight: names at the centroids instead.
LEGEND_MAX = 25


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
    focus: Sequence[str] | None = None,
    colours: Mapping[str, str] | None = None,
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
        order.insert(0, UNLABELLED)  # drawn first: the intents' points sit on top
    colours = {**intent_colours(order), **(colours or {})}
    focused = set(focus or ())
    traces: list[go.Scatter | go.Scattergl] = []
    for key in order:
        idx = groups[key]
        # Unlabelled points are small and grey unless they are what is highlighted; intents out
        # of the focus (a search) are grey and faint, so the focused ones stand out.
        quiet = key == UNLABELLED and highlight != "unlabelled"
        faded = bool(focused) and key not in focused
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
            cls(  # built as they are, unchecked: Plotly's checks took 10 s for a 3,770-point map
                x=pts[idx, 0].tolist(),
                y=pts[idx, 1].tolist(),
                mode="markers",
                name=plain(key),
                legendgroup=key,
                showlegend=legend,
                customdata=[int(m.ids[i]) for i in idx],
                hovertext=hover,
                hovertemplate="%{hovertext}<extra></extra>",
                marker={
                    "color": OUT_OF_FOCUS_COLOUR if faded else colours[key],
                    "symbol": [SPLIT_SYMBOLS.get(str(m.splits[i]), OTHER_SYMBOL) for i in idx],
                    "size": [4 if (quiet or faded) else 9 if (h and highlight) else 7 for h in lit],
                    "opacity": [
                        0.5 if (quiet or faded) and h else 0.95 if h else _DIM_OPACITY for h in lit
                    ],
                    "line": {"width": 0},
                },
                _validate=False,
            )
        )
    return traces, int(mask.sum())


def _layout(fig: go.Figure, n_intents: int, *, top: int, meta: dict[str, Any]) -> None:
    legend = n_intents <= LEGEND_MAX
    fig.update_layout(
        dragmode="lasso",
        hovermode="closest",
        clickmode="event+select",
        showlegend=legend,
        legend={"itemsizing": "constant", "title": {"text": "intent"}},
        margin={"l": 10, "r": 10, "t": top, "b": 10},
        height=720,
        meta=meta,
        template="plotly_white",
    )
    fig.update_xaxes(showticklabels=False, zeroline=False, showgrid=False)
    fig.update_yaxes(showticklabels=False, zeroline=False, showgrid=False)


def warm_up() -> None:
    """Build and serialise a two-point map once. A process's first figure imports plotly's
    template and trace modules (10 s of a first Map render after a restart, measured on the
    2-core machine); the server does this at start-up instead (:func:`app.services.design.map_warm_up.start_warm_up`)."""
    fig = go.Figure(data=[go.Scattergl(x=[0.0, 1.0], y=[0.0, 1.0]), go.Scatter(x=[0.5], y=[0.5])])
    _layout(fig, 1, top=10, meta={})
    fig.to_json()


def _keys(m: MapData) -> list[str]:
    return [names[0] for g in m.gold if (names := _gold_tuple(g))]


def _n_intents(*maps: MapData) -> int:
    return len({names[0] for m in maps for g in m.gold if (names := _gold_tuple(g))})


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
    focus: Sequence[str] | None = None,
    names: bool | None = None,
    colours: Mapping[str, str] | None = None,
    figure_px: tuple[float, float] | None = None,
    top: int | None = None,
    zoom: tuple[tuple[float, float], tuple[float, float]] | None = None,
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
        focus: intents to isolate (the others grey and faint); None or empty: all.
        names: draw intent names at their centroids (default: when the legend is hidden, i.e.
            more than :data:`LEGEND_MAX` intents, or when there is a focus).
        colours: intent -> colour (from :func:`intent_colours` of all the project's intents, so
            every view agrees); default: from the intents on this map.
        figure_px: the figure's size (px) on the page, which the names are placed for
            (default: the smallest the Map tab draws, :data:`app.plots.labels.PLOT_PX`).
        top: the top margin (px; default: room for the title, if any).
        zoom: the axes' ranges the person zoomed to (default: every point): the names are
            placed for them, so a zoom into a crowded centre names what fits there.

    Returns:
        A figure with one trace per intent (sorted by name, unlabelled first), then the names;
        ``layout.meta`` holds ``n_points``, ``n_highlighted`` and, with names, what
        :meth:`app.plots.labels.Names.meta` says.

    Example:
        >>> fig = scatter_map([[0, 0]], [1], ["hi"], [None], [None], ["unlabelled"])
        >>> fig.layout.meta["n_points"]
        1
    """
    m = MapData(points_2d, ids, texts, gold, predicted, splits, margins)
    traces, lit = _map_traces(
        m,
        highlight=highlight,
        low_margin=low_margin,
        colour_by=colour_by,
        webgl=webgl,
        legend=True,
        focus=focus,
        colours=colours,
    )
    fig = go.Figure(data=traces, _validate=False)
    n_intents = _n_intents(m)
    axes = zoom or ranges(m)  # fixed: the names are placed for them
    meta: dict[str, Any] = {"n_points": len(ids), "n_highlighted": lit, "highlight": highlight}
    top = top if top is not None else 50 if title else 20
    if names if names is not None else (n_intents > LEGEND_MAX or bool(focus)):
        # the legend, when there is one, takes about 250 px of the plot's width
        legend = n_intents <= LEGEND_MAX
        plot = plot_area(figure_px, top=top, legend=legend)
        plot = plot or (PLOT_PX[0] - (LEGEND_PX if legend else 0), PLOT_PX[1])
        found = map_names(m, axes, focus, plot_px=plot)
        fig.update_layout(annotations=found.annotations)
        meta.update(found.meta())
    fig.update_xaxes(range=list(axes[0]))
    fig.update_yaxes(range=list(axes[1]))
    fig.update_layout(title={"text": title})  # unchecked figure: no shorthand
    _layout(fig, n_intents, top=top, meta=meta)
    return fig


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
    focus: Sequence[str] | None = None,
    names: bool | None = None,
    colours: Mapping[str, str] | None = None,
    figure_px: tuple[float, float] | None = None,
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
        align_b: align the right map onto the left one.
        highlight, low_margin, webgl, focus, names, colours, figure_px: as in
            :func:`scatter_map` (the highlight on both panels; default size: :data:`PANEL_PX`).

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
            focus=focus,
            colours=colours or intent_colours([*_keys(map_a), *_keys(map_b)]),
        )
        for tr in traces:
            tr.showlegend = tr.name not in seen
            seen.add(str(tr.name))
            fig.add_trace(tr, row=1, col=col)
    n_intents = _n_intents(map_a, map_b)
    axes = [ranges(map_a), ranges(map_b)]
    meta: dict[str, Any] = {"n_points": [len(map_a.ids), len(map_b.ids)], "highlight": highlight}
    if names if names is not None else (n_intents > LEGEND_MAX or bool(focus)):
        legend = n_intents <= LEGEND_MAX
        plot = plot_area(figure_px, top=70, legend=legend, panels=2) or PANEL_PX
        left = map_names(map_a, axes[0], focus, plot_px=plot)
        right = map_names(map_b, axes[1], focus, plot_px=plot, xref="x2", yref="y2")
        # the subplots' titles are annotations too: the names join them
        named = [*fig.layout.annotations, *left.annotations, *right.annotations]
        fig.update_layout(annotations=named)
        hidden = {*left.meta()["names_hidden"], *right.meta()["names_hidden"]}
        meta.update(names_hidden=sorted(hidden))
    for col, (xr, yr) in enumerate(axes, start=1):
        fig.update_xaxes(range=list(xr), row=1, col=col)
        fig.update_yaxes(range=list(yr), row=1, col=col)
    _layout(fig, n_intents, top=70, meta=meta)
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
