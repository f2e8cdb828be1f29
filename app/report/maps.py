"""The report's maps: a fixed sample of at most :data:`MAP_POINTS` utterances, and a figure made
lighter to send and to draw than the app's interactive map (one trace per panel)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from app.plots import MapData

MAP_POINTS = 2000  # points drawn per map at most (a fixed sample beyond)


def _sample(m: MapData, keep: Sequence[int]) -> MapData:
    pts = np.asarray(m.points)
    return MapData(
        pts[list(keep)],
        [m.ids[i] for i in keep],
        [m.texts[i] for i in keep],
        [m.gold[i] for i in keep],
        [m.predicted[i] for i in keep],
        [m.splits[i] for i in keep],
        [m.margins[i] for i in keep] if m.margins is not None else None,
    )


def sample_maps(before: MapData, after: MapData) -> tuple[MapData, MapData]:
    """Both maps over the same fixed sample of at most :data:`MAP_POINTS` utterances."""
    if len(before.ids) <= MAP_POINTS:
        return before, after
    rng = np.random.default_rng(0)
    keep = sorted(int(i) for i in rng.choice(len(before.ids), MAP_POINTS, replace=False))
    ids = {before.ids[i] for i in keep}
    keep_after = [i for i, u in enumerate(after.ids) if u in ids]
    return _sample(before, keep), _sample(after, keep_after)


def lighten(fig: go.Figure) -> go.Figure:
    """A map that is lighter to send and to draw: in each panel, the points of all intents in one
    trace (one SVG group instead of one per intent; the intent names are drawn at the clusters),
    coordinates as float32 (base64 in the JSON), hover labels cut to the utterance and its intents
    (the app's map shows margin, split and id)."""
    panels: dict[tuple[str, str], dict[str, list[Any]]] = {}
    others = []
    for t in fig.data:
        if t.mode != "markers":
            others.append(t)
            continue
        n = len(t.x)
        p = panels.setdefault((t.xaxis or "x", t.yaxis or "y"), {})
        m = t.marker
        for key, values in (
            ("x", list(t.x)),
            ("y", list(t.y)),
            ("hover", [_short_hover(str(h)) for h in t.hovertext]),
            ("color", _each(m.color, n)),
            ("symbol", _each(m.symbol, n)),
            ("size", _each(m.size, n)),
            ("opacity", _each(m.opacity, n)),
        ):
            p.setdefault(key, []).extend(values)
    merged = [
        go.Scatter(
            x=np.asarray(p["x"], dtype=np.float32),
            y=np.asarray(p["y"], dtype=np.float32),
            xaxis=xa,
            yaxis=ya,
            mode="markers",
            hovertext=p["hover"],
            hovertemplate="%{hovertext}<extra></extra>",
            marker={
                "color": p["color"],
                "symbol": p["symbol"],
                "size": p["size"],
                "opacity": p["opacity"],
                "line": {"width": 0},
            },
            showlegend=False,
        )
        for (xa, ya), p in panels.items()
    ]
    fig.data = ()
    fig.add_traces([*merged, *others])
    fig.update_layout(showlegend=False, dragmode="zoom", clickmode="none")
    return fig


def _each(value: Any, n: int) -> list[Any]:
    return list(value) if isinstance(value, list | tuple | np.ndarray) else [value] * n


def _short_hover(text: str) -> str:
    """``<b>utterance</b><br>gold: a<br>predicted: a<br>margin…`` → ``<b>utterance</b><br>a``
    (or ``gold: a<br>predicted: b`` when they differ)."""
    parts = text.split("<br>")
    gold = next((p[6:] for p in parts if p.startswith("gold: ")), None)
    pred = next((p[11:] for p in parts if p.startswith("predicted: ")), None)
    if gold is None or pred is None:
        return text
    said = gold if gold == pred else f"gold: {gold}<br>predicted: {pred}"
    return f"{parts[0]}<br>{said}"
